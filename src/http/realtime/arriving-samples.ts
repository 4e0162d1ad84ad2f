/**
 * A realtime session's appends decoded and brought to the rate the session keeps, as they arrive:
 * the model's input rate (16 kHz for every engine voxd has), or the client's when that is lower
 * (8 kHz G.711 is kept as it is: upsampling would only double what is held). A 384 kHz client's
 * two minutes are then 7.7 MB held instead of 184 MB. One StreamResampler carries the filter across
 * appends, so the samples are exactly those of converting the whole stream at once; a commit flushes
 * it, so a committed buffer is exactly its audio converted whole, as the runtime did before.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { StreamResampler } from '../../audio/convert.js';
import { bytesPerSample, decodeSamples, type Encoding } from './audio-format.js';

/**
 * Input frames decoded and converted in one turn of the event loop: about a million filter
 * multiply-adds, a few milliseconds; a 15 MiB append is converted in slices with the loop turning
 * in between. A microphone's 100 ms append is one slice.
 */
export const SLICE_FRAMES = 16_384;

export class ArrivingSamples {
  #resampler: StreamResampler | undefined;

  /** `sourceRate`: the client's; `rate`: the rate every sample handed out is at. */
  constructor(
    readonly sourceRate: number,
    readonly rate: number,
  ) {}

  /** The most samples that `frames` more frames of the client's become, once flushed. */
  framesFor(frames: number): number {
    return this.rate === this.sourceRate ? frames : Math.ceil((frames * this.rate) / this.sourceRate) + 1;
  }

  /**
   * The samples `bytes` (whole frames) complete, in pieces (a piece a slice: joined, a 15 MiB
   * append was one more copy into fresh memory); those the filter still needs come later or at flush().
   */
  async push(bytes: Uint8Array, encoding: Encoding): Promise<Float32Array[]> {
    const width = bytesPerSample(encoding);
    const frames = bytes.length / width;
    const parts: Float32Array[] = [];
    for (let at = 0; at < frames; at += SLICE_FRAMES) {
      if (at > 0) await nextTurn();
      const end = Math.min(frames, at + SLICE_FRAMES);
      parts.push(this.#convert(decodeSamples(bytes.subarray(at * width, end * width), encoding)));
    }
    return parts;
  }

  /** The last samples of what was pushed; the next push starts a new stream. */
  flush(): Float32Array {
    const tail = this.#resampler?.flush() ?? new Float32Array(0);
    this.#resampler = undefined;
    return tail;
  }

  /** Forgets what the filter holds (a clear). */
  reset(): void {
    this.#resampler = undefined;
  }

  #convert(samples: Float32Array): Float32Array {
    if (this.sourceRate === this.rate) return samples;
    this.#resampler ??= new StreamResampler(this.sourceRate, this.rate);
    return this.#resampler.push(samples);
  }
}
