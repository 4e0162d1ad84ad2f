/**
 * The server-wide budget of client bytes held in memory at once (`max_inflight_body_bytes`), shared
 * by every protocol: HTTP request bodies, and what streaming sessions hold (a realtime buffer and
 * its committed turns, unexamined server-VAD audio, a Wyoming utterance, bridge frames waiting
 * behind the running one). Each holder takes bytes through its own lease and gives them back when
 * it lets them go; the lease returns everything when its holder ends, however it ends. Without one
 * budget each protocol was bounded alone and any number of sessions at once were not: six bridge
 * sockets held 516 MB past a 64 MiB budget, one realtime session 688 MB (probe 2026-12, F5/F6/F9/F10).
 */
import { VoxdError } from '../errors.js';

/** Seconds a client refused for the budget is told to wait: held bytes are released about that fast. */
export const BUDGET_RETRY_AFTER_S = 1;

export class ByteBudget {
  #inUse = 0;

  /** `limit` 0: no limit. */
  constructor(readonly limit: number) {}

  /** Bytes held now over every holder. */
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

/** One holder's share of the budget: what it holds now, given back at its end. */
export class ByteLease {
  #held = 0;
  #ended = false;

  /** `what` names the holder in the refusal ("request body", "realtime session"). */
  constructor(
    readonly budget: ByteBudget,
    private readonly what: string,
  ) {}

  /** Bytes this holder has now. */
  get held(): number {
    return this.#held;
  }

  /**
   * Takes `bytes` more; a 503 `body_budget` (Retry-After) when they do not fit. A holder that has
   * ended takes nothing: what it still does is dropped with it.
   */
  hold(bytes: number): void {
    if (this.#ended || bytes <= 0) return;
    if (!this.budget.take(bytes))
      throw new VoxdError(
        'E_BODY_BUDGET',
        `${this.what}: the server holds ${this.budget.inUse} bytes of client data and ${bytes} more would pass max_inflight_body_bytes=${this.budget.limit}; retry shortly`,
        { retryAfterS: BUDGET_RETRY_AFTER_S },
      );
    this.#held += bytes;
  }

  /** Whether `bytes` more would fit now (nothing is taken). */
  fits(bytes: number): boolean {
    const { limit, inUse } = this.budget;
    return limit <= 0 || inUse + bytes <= limit;
  }

  /** Gives back `bytes` the holder no longer has in memory. */
  free(bytes: number): void {
    const freed = Math.min(Math.max(0, bytes), this.#held);
    this.#held -= freed;
    this.budget.give(freed);
  }

  /** The holder is over: everything goes back. Idempotent. */
  end(): void {
    this.#ended = true;
    this.free(this.#held);
  }
}
