/** Time source of the runtime; tests pass a manual clock to drive idle retirement and overdue checks. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => performance.now() };
