/**
 * A session's input audio as mono pieces on one timeline: positions count samples from the first
 * ever appended, so a turn's start, the speech detector's windows and `audio_start_ms` all speak of
 * the same place however much has been dropped since. Nothing is copied until a slice is taken.
 */
export class SampleBuffer {
  #pieces: Float32Array[] = [];
  /** Position of the first sample still held. */
  #start = 0;
  #end = 0;

  /** Position just past the last sample appended. */
  get end(): number {
    return this.#end;
  }

  /** Position of the first sample still held. */
  get start(): number {
    return this.#start;
  }

  /** Samples held. */
  get length(): number {
    return this.#end - this.#start;
  }

  append(samples: Float32Array): void {
    if (samples.length === 0) return;
    this.#pieces.push(samples);
    this.#end += samples.length;
  }

  /** The samples in [from, to), clamped to what is held, as one new array. */
  slice(from: number, to = this.#end): Float32Array {
    const lo = Math.max(from, this.#start);
    const hi = Math.min(to, this.#end);
    const out = new Float32Array(Math.max(0, hi - lo));
    let at = this.#start;
    for (const piece of this.#pieces) {
      const pieceEnd = at + piece.length;
      if (pieceEnd > lo && at < hi) {
        const a = Math.max(lo, at) - at;
        const b = Math.min(hi, pieceEnd) - at;
        out.set(piece.subarray(a, b), Math.max(lo, at) - lo);
      }
      at = pieceEnd;
      if (at >= hi) break;
    }
    return out;
  }

  /** Forgets the samples before `position` (whole pieces only; a piece across it is kept). */
  dropBefore(position: number): void {
    while (this.#pieces.length > 0 && this.#start + this.#pieces[0]!.length <= position) {
      this.#start += this.#pieces.shift()!.length;
    }
  }

  /** Forgets everything; the timeline goes on from where it was. */
  clear(): void {
    this.#pieces = [];
    this.#start = this.#end;
  }
}
