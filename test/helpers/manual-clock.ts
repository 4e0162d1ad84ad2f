/** A clock whose time moves only when a test advances it; its timers fire inside advance(). */
import type { Clock, Timer } from '../../src/util/clock.js';

interface Pending {
  due: number;
  every: number;
  fn: () => void;
  seq: number;
}

export class ManualClock implements Clock {
  #now = 1_000_000;
  #seq = 0;
  readonly #pending = new Set<Pending>();

  now(): number {
    return this.#now;
  }

  after(ms: number, fn: () => void): Timer {
    return this.#add({ due: this.#now + Math.max(0, ms), every: 0, fn, seq: this.#seq++ });
  }

  every(ms: number, fn: () => void): Timer {
    return this.#add({ due: this.#now + Math.max(1, ms), every: Math.max(1, ms), fn, seq: this.#seq++ });
  }

  /** The timers now scheduled (a test checks which deadlines are armed). */
  get timers(): number {
    return this.#pending.size;
  }

  /** Moves time forward by `ms`, firing every timer that falls due, in due order. */
  advance(ms: number): void {
    const target = this.#now + ms;
    for (;;) {
      let next: Pending | undefined;
      for (const p of this.#pending) {
        if (p.due <= target && (!next || p.due < next.due || (p.due === next.due && p.seq < next.seq)))
          next = p;
      }
      if (!next) break;
      this.#now = Math.max(this.#now, next.due);
      if (next.every > 0) next.due += next.every;
      else this.#pending.delete(next);
      next.fn();
    }
    this.#now = target;
  }

  #add(p: Pending): Timer {
    this.#pending.add(p);
    return { cancel: () => this.#pending.delete(p) };
  }
}
