/**
 * One status snapshot per tick for every status stream of a server: the model list is read and
 * serialised once, and each stream sends the same bytes when they changed since its last event.
 * With a stream serialising the list itself every second, 100 streams over 2,000 models used 42 %
 * of a core (docs/reliability.md has the figures).
 */
export class StatusFeed {
  #json: string | undefined;
  #frame: Buffer | undefined;
  #subscribers = 0;
  #timer: NodeJS.Timeout | undefined;
  readonly #waiters = new Set<() => void>();

  constructor(
    /** The snapshot's JSON, read fresh. */
    private readonly read: () => string,
    private readonly intervalMs: number,
  ) {}

  /** The latest snapshot's JSON (read at subscription and on every tick). */
  get json(): string {
    this.#json ??= this.read();
    return this.#json;
  }

  /** The latest snapshot as one SSE `data:` frame, encoded once for every stream. */
  get frame(): Buffer {
    this.#frame ??= Buffer.from(`data: ${this.json}\n\n`);
    return this.#frame;
  }

  /**
   * Joins the feed; the returned function leaves it (idempotent). The snapshot is read afresh, so a
   * new stream's first event is the state now; the first subscriber starts the ticks.
   */
  subscribe(): () => void {
    this.#set(this.read());
    if (this.#subscribers++ === 0) {
      this.#timer = setInterval(() => this.#tick(), this.intervalMs);
      this.#timer.unref();
    }
    let left = false;
    return () => {
      if (left) return;
      left = true;
      if (--this.#subscribers === 0) {
        clearInterval(this.#timer);
        this.#timer = undefined;
      }
    };
  }

  /** Resolves at the next tick, or at once when `signal` aborts; leaves no listener behind. */
  next(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const done = () => {
        this.#waiters.delete(done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      this.#waiters.add(done);
      signal.addEventListener('abort', done, { once: true });
    });
  }

  #tick(): void {
    this.#set(this.read());
    for (const wake of [...this.#waiters]) wake();
  }

  #set(json: string): void {
    // Unchanged, the same string object stays: each stream's comparison with it is then one step.
    if (json === this.#json) return;
    this.#json = json;
    this.#frame = undefined;
  }
}
