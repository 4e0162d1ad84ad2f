/**
 * The ffmpeg children's counting semaphore, fair between the clients that wait for it. A plain
 * FIFO let one client keep the whole pool: it only had to send as many slow inputs as there are
 * slots, and every later request waited for them. Here waiters are served round-robin by owner
 * (the request's API key, else its client address: the owner served least recently goes first,
 * each owner's requests in their arrival order), and while another owner waits, no owner is
 * given a slot that would make it hold more than `size - 1`: one slot always turns over to someone
 * else as soon as any is freed.
 */

/** Who a slot is taken for; undefined: a caller of its own (no cap is shared with anyone). */
export type SlotOwner = string | undefined;

interface Waiter {
  owner: string | symbol;
  grant(): void;
}

export class Slots {
  readonly size: number;
  #free: number;
  /** The most slots one owner holds while another owner waits. */
  readonly #cap: number;
  readonly #held = new Map<string | symbol, number>();
  /** Each waiting owner's waiters, in arrival order. */
  readonly #queues = new Map<string | symbol, Waiter[]>();
  /** When each owner holding or awaiting a slot was last given one: the least recent goes next. */
  readonly #served = new Map<string | symbol, number>();
  #grants = 0;

  constructor(size: number) {
    this.size = size;
    this.#free = size;
    this.#cap = Math.max(1, size - 1);
  }

  /** Slots in use now (for tests and metrics). */
  get busy(): number {
    return this.size - this.#free;
  }

  /** Requests waiting now. */
  get waiting(): number {
    let n = 0;
    for (const queue of this.#queues.values()) n += queue.length;
    return n;
  }

  /** Whether `owner` may take a free slot now. */
  #mayTake(owner: string | symbol): boolean {
    if (this.#free === 0) return false;
    if ((this.#held.get(owner) ?? 0) < this.#cap) return true;
    for (const other of this.#queues.keys()) if (other !== owner) return false;
    return true;
  }

  #grant(owner: string | symbol): () => void {
    this.#free--;
    this.#held.set(owner, (this.#held.get(owner) ?? 0) + 1);
    this.#served.set(owner, ++this.#grants);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#free++;
      const held = (this.#held.get(owner) ?? 1) - 1;
      if (held === 0) this.#held.delete(owner);
      else this.#held.set(owner, held);
      this.#dispatch();
      this.#forget(owner);
    };
  }

  /** An owner with nothing held and nothing awaited leaves no trace. */
  #forget(owner: string | symbol): void {
    if (!this.#held.has(owner) && !this.#queues.has(owner)) this.#served.delete(owner);
  }

  /** Hands free slots to waiters: each to the owner served least recently among those who may take it. */
  #dispatch(): void {
    while (this.#free > 0) {
      let next: string | symbol | undefined;
      let nextServed = Number.POSITIVE_INFINITY;
      for (const owner of this.#queues.keys()) {
        const served = this.#served.get(owner) ?? 0;
        if (served < nextServed && this.#mayTake(owner)) {
          next = owner;
          nextServed = served;
        }
      }
      if (next === undefined) return;
      const queue = this.#queues.get(next)!;
      const waiter = queue.shift()!;
      if (queue.length === 0) this.#queues.delete(next);
      waiter.grant();
    }
  }

  /** A slot for `owner`; resolves with its release (idempotent). Rejects when `signal` aborts first. */
  async take(owner: SlotOwner, signal: AbortSignal): Promise<() => void> {
    signal.throwIfAborted();
    const key: string | symbol = owner ?? Symbol('anonymous');
    // An owner with waiters queued keeps its own order: a new request does not pass them.
    if (!this.#queues.has(key) && this.#mayTake(key)) return this.#grant(key);
    return new Promise<() => void>((resolve, reject) => {
      const waiter: Waiter = {
        owner: key,
        grant: () => {
          signal.removeEventListener('abort', onAbort);
          resolve(this.#grant(key));
        },
      };
      const onAbort = () => {
        const queue = this.#queues.get(key);
        const i = queue?.indexOf(waiter) ?? -1;
        if (queue && i >= 0) {
          queue.splice(i, 1);
          if (queue.length === 0) this.#queues.delete(key);
        }
        // Its leaving may let an owner at its cap take a free slot.
        this.#dispatch();
        this.#forget(key);
        reject(signal.reason);
      };
      const queue = this.#queues.get(key);
      if (queue) queue.push(waiter);
      else this.#queues.set(key, [waiter]);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}
