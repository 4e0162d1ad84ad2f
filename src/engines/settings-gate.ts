/**
 * Admission to one native engine object whose settings are global to it (sherpa's
 * `OfflineRecognizer.setConfig`), for a runner that serves several calls at once: calls under the
 * settings now applied run together; a call that needs other settings waits until the running
 * calls end, then applies its settings and runs. Arrival order is kept, so a call that needs other
 * settings is not starved by a stream of calls under the current ones (those queue behind it).
 * The settings are never changed while a call runs on the object.
 */
export class SettingsGate<S> {
  #applied: string;
  #running = 0;
  readonly #queue: { key: string; settings: S; start(): void; fail(err: unknown): void }[] = [];

  /** `apply` changes the object's settings; `initial` is the settings' key as the object was built. */
  constructor(
    private readonly apply: (settings: S) => void,
    initial: string,
  ) {
    this.#applied = initial;
  }

  /** Runs `work` under `settings` (identified by `key`), when no call under other settings runs. */
  async run<T>(key: string, settings: S, work: () => Promise<T>): Promise<T> {
    await new Promise<void>((start, fail) => {
      this.#queue.push({ key, settings, start, fail });
      this.#dispatch();
    });
    try {
      return await work();
    } finally {
      this.#running -= 1;
      this.#dispatch();
    }
  }

  #dispatch(): void {
    for (;;) {
      const next = this.#queue[0];
      if (!next) return;
      if (next.key !== this.#applied) {
        if (this.#running > 0) return;
        try {
          this.apply(next.settings);
        } catch (err) {
          // Settings the object refuses fail their call only; what was applied before stays.
          this.#queue.shift();
          next.fail(err);
          continue;
        }
        this.#applied = next.key;
      }
      this.#queue.shift();
      this.#running += 1;
      next.start();
    }
  }
}
