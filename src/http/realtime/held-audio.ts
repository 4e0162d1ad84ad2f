/**
 * A realtime session's audio on the server's byte budget (`max_inflight_body_bytes`, shared with
 * HTTP bodies and every other session). Audio enters memory only through an append, so an append
 * is where the budget can refuse it; after that it moves (the input buffer, a committed turn
 * waiting for its slot, a live turn's pieces not yet taken by its engine) and is copied on the way
 * (a commit slices the buffer before the buffer drops it). Counting copies would make a move look
 * like new audio and refuse it half-way; so what is counted is the span of the session's timeline
 * that something still holds (the union of the holders' ranges, four bytes a frame): a move
 * counts nothing new, and a range given up gives its bytes back. Without it one session held
 * 688 MB of committed turns and another 683 MB of audio its speech detector had not examined
 * (probe 2026-12, F5/F6).
 */
import type { ByteLease } from '../../session/byte-budget.js';

/** Bytes of one frame held: the buffer and the turns keep mono Float32 at the session's rate. */
export const BYTES_PER_FRAME = 4;

/** A span of the session's timeline (frames from the first ever appended) that a holder keeps. */
export interface HeldRange {
  from: number;
  to: number;
}

export class HeldAudio {
  readonly #lease: ByteLease;
  readonly #ranges = new Set<HeldRange>();
  /** Bytes this session's audio holds on the lease now. */
  #counted = 0;

  constructor(lease: ByteLease) {
    this.#lease = lease;
  }

  /** Bytes held for audio now. */
  get bytes(): number {
    return this.#counted;
  }

  /**
   * Takes the bytes of `frames` frames about to be appended; an E_BODY_BUDGET refusal (nothing
   * taken) when they would pass the server's budget.
   */
  admit(frames: number): void {
    const bytes = frames * BYTES_PER_FRAME;
    this.#lease.hold(bytes);
    this.#counted += bytes;
  }

  /**
   * A holder keeps `range` until `release`; its owner moves it as it takes or gives up audio (the
   * input buffer's is read through getters), and settles.
   */
  hold(range: HeldRange): HeldRange {
    this.#ranges.add(range);
    return range;
  }

  release(range: HeldRange): void {
    this.#ranges.delete(range);
    this.settle();
  }

  /** Gives back the bytes of what no holder keeps any more. */
  settle(): void {
    const held = covered([...this.#ranges]) * BYTES_PER_FRAME;
    if (held >= this.#counted) return;
    this.#lease.free(this.#counted - held);
    this.#counted = held;
  }
}

/** Frames covered by at least one of `ranges`. */
function covered(ranges: HeldRange[]): number {
  const sorted = ranges.filter((r) => r.to > r.from).sort((a, b) => a.from - b.from);
  let total = 0;
  let end = Number.NEGATIVE_INFINITY;
  for (const { from, to } of sorted) {
    if (to <= end) continue;
    total += to - Math.max(from, end);
    end = to;
  }
  return total;
}
