/**
 * A change signal: the runtime calls notify() after every change a caller may wait for (a model's
 * state, its manager activity, its queue and slots), and when() resolves once a condition over that
 * state holds. It replaces polling: a condition is checked exactly when something changed, never on
 * a timer, so a wait costs nothing while nothing happens and ends in the same turn as the change.
 */
export class Changes {
  readonly #listeners = new Set<() => void>();

  notify(): void {
    // Snapshot: a listener removes itself while the set is iterated.
    if (this.#listeners.size > 0) for (const listener of [...this.#listeners]) listener();
  }

  /**
   * Resolves once `holds()` is true: at once, or after the change that makes it so. Rejects with the
   * signal's reason when `signal` aborts first; the listener is removed either way.
   */
  when(holds: () => boolean, signal?: AbortSignal): Promise<void> {
    if (holds()) return Promise.resolve();
    signal?.throwIfAborted();
    return new Promise<void>((resolve, reject) => {
      const done = () => {
        this.#listeners.delete(check);
        signal?.removeEventListener('abort', onAbort);
      };
      const check = () => {
        if (!holds()) return;
        done();
        resolve();
      };
      const onAbort = () => {
        done();
        reject(signal?.reason);
      };
      this.#listeners.add(check);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
