/**
 * The server-wide budget of request body bytes held in memory at once (max_inflight_body_bytes) and
 * the whole-body deadline (body_deadline_ms). Each request with a body gets a lease when it arrives;
 * the body readers (body.ts, multipart.ts) take bytes from it before they hold them, and the lease
 * gives everything back when the response closes, however the request ends (answered, failed, cut
 * off by the client). Without it, each request was bounded alone but any number of them at once were
 * not: three 255 MB JSON bodies took 2.1 GB, about twenty default-sized ones 24 GiB.
 *
 * Requests read without a lease (a route handler called directly, not through the HTTP server) have
 * neither budget nor deadline.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { VoxdError } from '../../errors.js';
import { type ByteBudget, ByteLease } from '../../session/byte-budget.js';
import type { Clock } from '../../util/clock.js';
import type { MemoryRelease } from '../../util/release-memory.js';

/** The server-wide budget: one for every protocol (src/session/byte-budget.ts). */
export { ByteBudget as BodyBudget } from '../../session/byte-budget.js';

export interface DeadlineWatch {
  stop(): void;
}

/** One request's share of the budget, and the time its body is due by. */
export class BodyLease extends ByteLease {
  readonly #arrived: number;

  constructor(
    budget: ByteBudget,
    readonly clock: Clock,
    private readonly deadlineMs: number,
    /** The server's memory release, which a body's readers owe what they leave behind. */
    readonly memory: MemoryRelease,
  ) {
    super(budget, 'request body');
    this.#arrived = clock.now();
  }

  /**
   * Calls `onLate` with the 408 to fail the read with once body_deadline_ms have passed since the
   * request arrived (at once when they already have). A body that keeps sending a byte now and then
   * never trips body_timeout_ms; this bounds the whole of it.
   */
  watchDeadline(onLate: (err: VoxdError) => void): DeadlineWatch {
    const ms = this.deadlineMs;
    if (ms <= 0) return { stop() {} };
    const timer = this.clock.after(Math.max(0, this.#arrived + ms - this.clock.now()), () =>
      onLate(
        new VoxdError(
          'E_BODY_TIMEOUT',
          `request body: the whole body did not arrive within ${ms} ms (body_deadline_ms=${ms}); send it faster, or raise body_deadline_ms (0 = no limit)`,
        ),
      ),
    );
    return { stop: () => timer.cancel() };
  }
}

const leases = new WeakMap<IncomingMessage, BodyLease>();

/** Each HTTP server's budget, for a test to see what is held. */
const budgets = new WeakMap<object, ByteBudget>();

export function setBodyBudgetOf(server: object, budget: ByteBudget): void {
  budgets.set(server, budget);
}

/** The budget of an HTTP server made by createHttpServer. */
export function bodyBudgetOf(server: object): ByteBudget | undefined {
  return budgets.get(server);
}

/** Gives `req` a lease on `budget`, ended when `res` closes (every way a request ends closes it). */
export function leaseBody(
  req: IncomingMessage,
  res: ServerResponse,
  budget: ByteBudget,
  clock: Clock,
  deadlineMs: number,
  memory: MemoryRelease,
): void {
  const lease = new BodyLease(budget, clock, deadlineMs, memory);
  leases.set(req, lease);
  res.once('close', () => lease.end());
}

/** The request's lease; undefined for one read outside the HTTP server. */
export function bodyLeaseOf(req: IncomingMessage): BodyLease | undefined {
  return leases.get(req);
}
