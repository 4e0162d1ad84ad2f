/**
 * One Wyoming stream's audio brought to the model's rate, mono, chunk by chunk as it arrives: what
 * an exchange keeps is then 4 bytes per sample at the model's rate (64 KB a second at 16 kHz),
 * whatever the client sends. The result is exactly what converting the whole stream at once gives
 * (one StreamResampler carries the filter across chunks), so a transcription hears the same samples
 * as before, when the stream was held whole in the client's format and converted at audio-stop.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { StreamResampler } from '../audio/convert.js';
import { joinSamples } from '../audio/join-samples.js';
import { decodeMono, frameCount, type PcmFormat } from './audio-format.js';
import { WyomingError } from './framing.js';

/** Every engine voxd has takes 16 kHz; a model not loaded yet is assumed to as well. */
export const DEFAULT_INPUT_RATE = 16_000;

/**
 * Input frames converted in one turn of the event loop. Downsampling costs about 64 filter taps an
 * input frame whatever the rates, so this is about a million multiply-adds, a few milliseconds: one
 * 4 MiB chunk of 384 kHz audio converted at once held the event loop 300 ms on a busy 2-core machine.
 * A microphone's chunk (0.1 s at 16 to 48 kHz) is one slice.
 */
export const SLICE_FRAMES = 16_384;

export class ArrivingAudio {
  /** The stream's own rate, set by its first chunk. */
  #sourceRate: number | undefined;
  #resampler: StreamResampler | undefined;

  /** `rate`: the model's input rate, which every sample handed out is at. */
  constructor(readonly rate: number) {}

  /** Seconds of the stream's audio in `payload` (before conversion), for its length limits. */
  static seconds(payload: Buffer, format: PcmFormat): number {
    return payload.length / (format.width * format.channels) / format.rate;
  }

  /**
   * The chunk's samples at `rate`, mono (those the resampler still needs later come from flush()),
   * converted a slice at a time with the event loop turning in between.
   */
  async push(payload: Buffer, format: PcmFormat): Promise<Float32Array> {
    this.#sourceRate ??= format.rate;
    const source = this.#sourceRate;
    if (format.rate !== source)
      throw new WyomingError(
        'invalid_audio',
        `audio-chunk: rate ${format.rate} differs from this stream's ${source}; one stream has one rate`,
      );
    const frames = frameCount(payload, format);
    if (frames <= SLICE_FRAMES) return this.#convert(decodeMono(payload, format));
    const frameBytes = format.width * format.channels;
    const parts: Float32Array[] = [];
    for (let at = 0; at < frames; at += SLICE_FRAMES) {
      if (at > 0) await nextTurn();
      const slice = payload.subarray(at * frameBytes, Math.min(frames, at + SLICE_FRAMES) * frameBytes);
      parts.push(this.#convert(decodeMono(slice, format)));
    }
    return joinSamples(parts);
  }

  #convert(mono: Float32Array): Float32Array {
    if (this.#sourceRate === this.rate) return mono;
    this.#resampler ??= new StreamResampler(this.#sourceRate!, this.rate);
    return this.#resampler.push(mono);
  }

  /** The last samples once the stream has ended. */
  flush(): Float32Array {
    return this.#resampler?.flush() ?? new Float32Array(0);
  }
}
