/**
 * A model's max_queued_requests: the refusal past it (E_QUEUE_FULL with a Retry-After estimate)
 * and the saturation mark behind `ready_when_saturated`. Kept apart from the scheduler so the FIFO
 * stays about order and this about how much of it a burst may claim.
 */
import { VoxdError } from '../errors.js';

/** Weight of the newest hold time in the running average: recent enough to follow a load change. */
const HOLD_WEIGHT = 0.2;
/** Retry-After never says more than this: past an hour a client should think again, not wait. */
const MAX_RETRY_AFTER_S = 3600;

export class QueueBound {
  #max = 0;
  #saturated = false;
  /** Running average of how long a request holds its slot, in ms; 0 before the first release. */
  #holdMs = 0;

  /** The bound: 0 = unbounded. */
  get max(): number {
    return this.#max;
  }

  set max(max: number) {
    this.#max = max;
    // A new bound starts unsaturated; the next request to queue sets the mark again if it is full.
    this.#saturated = false;
  }

  /**
   * True from the moment the queue reaches its bound until it drains to the low mark (half the
   * bound, rounded down): the gap keeps a readiness probe from flapping at the edge.
   */
  get saturated(): boolean {
    return this.#saturated;
  }

  get lowMark(): number {
    return Math.floor(this.#max / 2);
  }

  /** A request joined the queue, which now holds `queued` requests. */
  queued(queued: number): void {
    if (this.#max > 0 && queued >= this.#max) this.#saturated = true;
  }

  /** A request left the queue (granted, timed out or gone), which now holds `queued`. */
  drained(queued: number): void {
    if (this.#saturated && queued <= this.lowMark) this.#saturated = false;
  }

  /** A request gave its slot back after holding it `ms`. */
  held(ms: number): void {
    this.#holdMs = this.#holdMs === 0 ? ms : this.#holdMs + HOLD_WEIGHT * (ms - this.#holdMs);
  }

  /**
   * Seconds until the present queue should have drained: the average hold time times the queue
   * length, shared among the slots; at least 1 (also before any request has finished).
   */
  retryAfterS(queued: number, capacity: number): number {
    const ms = (this.#holdMs * queued) / Math.max(1, capacity);
    return Math.min(MAX_RETRY_AFTER_S, Math.max(1, Math.ceil(ms / 1000)));
  }

  /** Throws E_QUEUE_FULL when `waiting` more waiters would not fit beside the `queued` ones. */
  checkRoom(model: string, queued: number, waiting: number, capacity: number): void {
    if (this.#max === 0 || queued + waiting <= this.#max) return;
    const retryAfterS = this.retryAfterS(queued, capacity);
    const asked = waiting === 1 ? '' : ` (${waiting} places asked)`;
    throw new VoxdError(
      'E_QUEUE_FULL',
      `model '${model}' is busy: its queue is full with ${queued} waiting${asked} ` +
        `(max_queued_requests=${this.#max}); retry after ${retryAfterS} s`,
      { retryAfterS },
    );
  }
}
