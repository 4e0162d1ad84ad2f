/**
 * ffmpeg's output (a streamed WAV of float samples) turned into mono samples as it arrives, within
 * a byte and a duration budget. Collecting the whole output first let a 107 KB FLAC declaring
 * 384 kHz and 8 channels take 3.7 GB before anything was checked: here each piece is downmixed and
 * stored at once (4 bytes a mono frame), and the caller stops ffmpeg the moment a budget is passed.
 * The downmix is the plain average `conformAudio` applies for every engine (they all take mono),
 * so the samples are the ones the old decode-then-convert path gave.
 */
import { memoryRelease } from '../util/release-memory.js';
import type { Audio } from './types.js';
import { HOST_LITTLE_ENDIAN } from './types.js';
import { WavError } from './wav-decode.js';

/** Mono frames per stored block: 1 MB. */
const BLOCK_FRAMES = 1 << 18;
/** ffmpeg's WAV header is under 100 bytes; more without a data chunk is not its output. */
const MAX_HEADER = 1 << 16;

export type Overrun = 'seconds' | 'bytes';

export class DecodedAudio {
  readonly #maxSeconds: number;
  readonly #maxBytes: number;
  #header: Buffer | undefined = Buffer.alloc(0);
  #rate = 0;
  #channels = 0;
  /** Bytes of a frame split across two pieces of output. */
  #carry = Buffer.alloc(0);
  readonly #blocks: Float32Array[] = [];
  #filled = 0;
  #frames = 0;
  /** Set once a budget is passed: nothing more is stored. */
  overrun: Overrun | undefined;

  /** `maxSeconds` 0: no duration limit; `maxBytes`: the most bytes the mono samples may take. */
  constructor(maxSeconds: number, maxBytes: number) {
    this.#maxSeconds = maxSeconds;
    this.#maxBytes = maxBytes;
  }

  get sampleRate(): number {
    return this.#rate;
  }

  get frames(): number {
    return this.#frames;
  }

  /** Takes the next piece of output; false once a budget is passed (the caller stops ffmpeg). */
  push(chunk: Buffer): boolean {
    if (this.overrun) return false;
    let bytes = chunk;
    if (this.#header) {
      bytes = this.#readHeader(chunk);
      if (this.#header) return true;
    }
    if (this.#carry.length > 0) bytes = Buffer.concat([this.#carry, bytes]);
    const frameBytes = this.#channels * 4;
    const whole = bytes.length - (bytes.length % frameBytes);
    this.#carry = Buffer.from(bytes.subarray(whole));
    const frames = whole / frameBytes;
    if (this.#maxSeconds > 0 && this.#frames + frames > this.#maxSeconds * this.#rate)
      this.overrun = 'seconds';
    else if ((this.#frames + frames) * 4 > this.#maxBytes) this.overrun = 'bytes';
    if (this.overrun) {
      this.#drop();
      return false;
    }
    this.#store(samplesOf(bytes, whole), frames);
    return true;
  }

  /** The header, once ffmpeg's fmt and data chunks are in; what follows is returned. */
  #readHeader(chunk: Buffer): Buffer {
    const head = this.#header!.length > 0 ? Buffer.concat([this.#header!, chunk]) : chunk;
    const found = readFfmpegHeader(head);
    if (found === undefined) {
      if (head.length >= MAX_HEADER) throw new WavError('ffmpeg wrote no audio header');
      this.#header = head;
      return Buffer.alloc(0);
    }
    this.#rate = found.sampleRate;
    this.#channels = found.channels;
    this.#header = undefined;
    return head.subarray(found.dataStart);
  }

  #store(samples: Float32Array, frames: number): void {
    const channels = this.#channels;
    let f = 0;
    while (f < frames) {
      let block = this.#blocks.at(-1);
      if (!block || this.#filled === block.length) {
        block = new Float32Array(BLOCK_FRAMES);
        this.#blocks.push(block);
        this.#filled = 0;
      }
      const n = Math.min(frames - f, block.length - this.#filled);
      if (channels === 1) block.set(samples.subarray(f, f + n), this.#filled);
      else {
        // The average conformAudio's toMono takes: summed as doubles, divided, then stored.
        for (let i = 0, p = f * channels; i < n; i++) {
          let sum = 0;
          for (let c = 0; c < channels; c++, p++) sum += samples[p]!;
          block[this.#filled + i] = sum / channels;
        }
      }
      this.#filled += n;
      f += n;
    }
    this.#frames += frames;
  }

  /** What was stored is garbage now: counted for the memory release, and dropped. */
  #drop(): void {
    memoryRelease.noteLargeBuffer(this.#blocks.length * BLOCK_FRAMES * 4);
    this.#blocks.length = 0;
    this.#carry = Buffer.alloc(0);
  }

  /** Whether ffmpeg wrote its header (an input with no audio ends before). */
  get started(): boolean {
    return this.#header === undefined;
  }

  /** The mono audio, in one array of exactly its length. */
  take(): Audio {
    const samples = new Float32Array(this.#frames);
    let at = 0;
    for (const block of this.#blocks) {
      const n = Math.min(block.length, this.#frames - at);
      samples.set(n === block.length ? block : block.subarray(0, n), at);
      at += n;
    }
    memoryRelease.noteLargeBuffer(this.#blocks.length * BLOCK_FRAMES * 4 + samples.byteLength);
    this.#blocks.length = 0;
    return { samples, sampleRate: this.#rate, channels: 1 };
  }
}

/** The first `whole` bytes of `bytes` as little-endian floats, without a copy where alignment allows. */
function samplesOf(bytes: Buffer, whole: number): Float32Array {
  if (HOST_LITTLE_ENDIAN && bytes.byteOffset % 4 === 0)
    return new Float32Array(bytes.buffer, bytes.byteOffset, whole / 4);
  const out = new Float32Array(whole / 4);
  for (let i = 0; i < out.length; i++) out[i] = bytes.readFloatLE(i * 4);
  return out;
}

/**
 * The rate, channels and data offset of the WAV header ffmpeg writes to a pipe (`-c:a pcm_f32le -f
 * wav`: RIFF, fmt, maybe LIST, then data with an unknown size); undefined until all of it is in.
 */
function readFfmpegHeader(
  head: Buffer,
): { sampleRate: number; channels: number; dataStart: number } | undefined {
  if (head.length < 12) return undefined;
  if (head.toString('latin1', 0, 4) !== 'RIFF' || head.toString('latin1', 8, 12) !== 'WAVE')
    throw new WavError('ffmpeg wrote no audio header');
  let format: { sampleRate: number; channels: number } | undefined;
  for (let pos = 12; pos + 8 <= head.length; ) {
    const id = head.toString('latin1', pos, pos + 4);
    const size = head.readUInt32LE(pos + 4);
    if (id === 'data') {
      if (!format) throw new WavError('ffmpeg wrote no audio format');
      return { ...format, dataStart: pos + 8 };
    }
    if (pos + 8 + size > head.length) return undefined;
    if (id === 'fmt ') {
      const code = head.readUInt16LE(pos + 8);
      const channels = head.readUInt16LE(pos + 10);
      const sampleRate = head.readUInt32LE(pos + 12);
      const bits = head.readUInt16LE(pos + 22);
      // 3: IEEE float; 0xfffe: extensible, which ffmpeg writes for float (its subformat is float too).
      if ((code !== 3 && code !== 0xfffe) || bits !== 32 || channels < 1 || sampleRate < 1)
        throw new WavError('ffmpeg wrote an unexpected audio format');
      format = { sampleRate, channels };
    }
    pos += 8 + size + (size & 1);
  }
  return undefined;
}
