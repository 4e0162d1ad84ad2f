/**
 * An abort source whose AbortSignal is made only when something asks for it.
 *
 * On Node 20 an AbortSignal is slow to make and to use: node gives its EventTarget a new prototype
 * after construction, which leaves the object in V8's slow (dictionary) mode, so making one costs
 * about 5 µs and every `aborted` read or listener change costs far more than on a plain object. A
 * request's client-gone source is a LazyAbort: the server and the runtime read `aborted` and
 * `reason` and listen through the methods below, and an AbortSignal exists only when a route hands
 * one to code that needs a real signal (a stream, a decoder, an engine).
 */

/** What the runtime and the scheduler need of a caller's abort: an AbortSignal, or a LazyAbort. */
export interface AbortSource {
  readonly aborted: boolean;
  readonly reason: unknown;
  throwIfAborted(): void;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

export class LazyAbort implements AbortSource {
  #aborted = false;
  #reason: unknown;
  #controller: AbortController | undefined;
  /** Listeners added here rather than on the signal, in order; undefined until the first. */
  #listeners: (() => void)[] | undefined;

  get aborted(): boolean {
    return this.#aborted;
  }

  get reason(): unknown {
    return this.#reason;
  }

  /** The AbortSignal, made on first use; it is already aborted when the source is. */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  throwIfAborted(): void {
    if (this.#aborted) throw this.#reason;
  }

  /**
   * Calls `listener` once when the source aborts. As with a signal, a listener added after the
   * abort is never called, and adding the same listener twice adds it once.
   */
  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.#aborted) return;
    this.#listeners ??= [];
    if (!this.#listeners.includes(listener)) this.#listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const listeners = this.#listeners;
    const index = listeners ? listeners.indexOf(listener) : -1;
    if (index >= 0) listeners!.splice(index, 1);
  }

  /** Aborts with `reason` (once): the listeners added here, in order, then the signal's. */
  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    const listeners = this.#listeners;
    if (listeners) {
      for (const listener of [...listeners]) {
        // One removed by an earlier listener is not called, as with a signal.
        const index = listeners.indexOf(listener);
        if (index < 0) continue;
        listeners.splice(index, 1);
        try {
          listener();
        } catch (err) {
          // A signal reports a listener's exception as uncaught, and still calls the others.
          process.nextTick(() => {
            throw err;
          });
        }
      }
    }
    this.#controller?.abort(reason);
  }
}
