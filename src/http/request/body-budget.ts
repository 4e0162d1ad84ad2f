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
import type { Clock } from '../../util/clock.js';
import type { MemoryRelease } from '../../util/release-memory.js';

/** Seconds a client refused for the budget is told to wait: bodies in flight take about that to be read. */
const BUDGET_RETRY_AFTER_S = 1;

export class BodyBudget {
  #inUse = 0;

  /** `limit` 0: no limit. */
  constructor(readonly limit: number) {}

  /** Bytes held now over every request. */
  get inUse(): number {
    return this.#inUse;
  }

  /** Takes `bytes` when they fit; false, taking nothing, when they would pass the limit. */
  take(bytes: number): boolean {
    if (this.limit > 0 && this.#inUse + bytes > this.limit) return false;
    this.#inUse += bytes;
    return true;
  }

  give(bytes: number): void {
    this.#inUse = Math.max(0, this.#inUse - bytes);
  }
}

export interface DeadlineWatch {
  stop(): void;
}

/** One request's share of the budget, and the time its body is due by. */
export class BodyLease {
  #held = 0;
  #ended = false;
  readonly #arrived: number;

  constructor(
    private readonly budget: BodyBudget,
    readonly clock: Clock,
    private readonly deadlineMs: number,
    /** The server's memory release, which a body's readers owe what they leave behind. */
    readonly memory: MemoryRelease,
  ) {
    this.#arrived = clock.now();
  }

  /** Bytes this request holds now. */
  get held(): number {
    return this.#held;
  }

  /**
   * Takes `bytes` more for this request; a 503 (Retry-After) when they do not fit. A request that
   * has ended takes nothing: what its reader still does is dropped with it.
   */
  hold(bytes: number): void {
    if (this.#ended || bytes <= 0) return;
    if (!this.budget.take(bytes))
      throw new VoxdError(
        'E_BODY_BUDGET',
        `request body: the server holds ${this.budget.inUse} bytes of request bodies and ${bytes} more would pass max_inflight_body_bytes=${this.budget.limit}; retry shortly`,
        { retryAfterS: BUDGET_RETRY_AFTER_S },
      );
    this.#held += bytes;
  }

  /** Gives back `bytes` the request no longer holds in memory (a part written to its spool file). */
  free(bytes: number): void {
    const freed = Math.min(bytes, this.#held);
    this.#held -= freed;
    this.budget.give(freed);
  }

  /** The request is over: everything goes back. Idempotent. */
  end(): void {
    this.#ended = true;
    this.free(this.#held);
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
const budgets = new WeakMap<object, BodyBudget>();

export function setBodyBudgetOf(server: object, budget: BodyBudget): void {
  budgets.set(server, budget);
}

/** The budget of an HTTP server made by createHttpServer. */
export function bodyBudgetOf(server: object): BodyBudget | undefined {
  return budgets.get(server);
}

/** Gives `req` a lease on `budget`, ended when `res` closes (every way a request ends closes it). */
export function leaseBody(
  req: IncomingMessage,
  res: ServerResponse,
  budget: BodyBudget,
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
