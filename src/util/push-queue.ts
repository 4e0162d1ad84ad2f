/**
 * An async iterable fed by pushes: what a producer hands over as it comes (a realtime turn's audio)
 * for a consumer that pulls (an engine's live run). One consumer; the iteration ends after `end()`
 * once what was pushed is taken, or throws what `fail()` gave. The producer bounds what it pushes.
 */
export class PushQueue<T> implements AsyncIterable<T> {
  #items: T[] = [];
  #ended = false;
  #error: { reason: unknown } | undefined;
  #wake: (() => void) | undefined;

  push(item: T): void {
    if (this.#ended || this.#error) return;
    this.#items.push(item);
    this.#notify();
  }

  end(): void {
    this.#ended = true;
    this.#notify();
  }

  fail(reason: unknown): void {
    this.#error ??= { reason };
    this.#items = [];
    this.#notify();
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      if (this.#error) throw this.#error.reason;
      const item = this.#items.shift();
      if (item !== undefined) yield item;
      else if (this.#ended) return;
      else await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }
}
