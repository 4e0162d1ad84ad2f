/**
 * A live turn's audio on its way to a streaming engine (server VAD with pocketsphinx): the pieces
 * the speech detector has examined, pushed as they are, taken by the engine's run as it decodes.
 * Its held range is the part of the session's timeline pushed and not yet taken, so the pieces
 * that wait (the turn waits for its slot, or the engine is slower than the speech) count against
 * the byte budget until the engine has them.
 */
import { type Audio, heldSamples } from '../../audio/types.js';
import { PushQueue } from '../../util/push-queue.js';
import type { HeldRange } from './held-audio.js';

export class LiveFeed implements AsyncIterable<Audio> {
  readonly #queue = new PushQueue<Audio>();
  /** Pushed and not yet taken; `from` moves as the engine takes pieces, `to` as pieces are pushed. */
  readonly range: HeldRange;
  readonly #taken: () => void;
  #over = false;

  /** `start`: where the turn's audio starts on the timeline; `taken`: called as pieces are taken. */
  constructor(start: number, taken: () => void) {
    this.range = { from: start, to: start };
    this.#taken = taken;
  }

  /** Hands over the audio up to `to` on the timeline. */
  push(audio: Audio, to: number): void {
    if (this.#over) return;
    this.range.to = to;
    this.#queue.push(audio);
  }

  /** The speech ended: the engine finishes with what it has. */
  end(): void {
    this.#queue.end();
  }

  /** The turn will not be transcribed (cleared, its client gone, its run failed): its engine stops. */
  fail(reason: unknown): void {
    this.#over = true;
    this.range.from = this.range.to;
    this.#queue.fail(reason);
    this.#taken();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Audio> {
    for await (const piece of this.#queue) {
      this.range.from = Math.min(this.range.to, this.range.from + heldSamples(piece).length);
      this.#taken();
      yield piece;
    }
  }
}
