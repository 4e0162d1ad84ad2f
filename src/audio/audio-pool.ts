/**
 * Decoding and resampling long audio takes long enough to stall every other request, so work above
 * a small size runs on a pool of worker threads; small inputs are converted inline, where a thread
 * hop would cost more than the work.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { invalidRequest } from '../errors.js';
import { memoryRelease } from '../util/release-memory.js';
import type { AudioFailure, AudioJob, AudioReply } from './audio-worker.js';
import { conformAudio } from './convert.js';
import { fromPlain, type PlainAudio, plainBuffer, toPlain } from './pcm16-audio.js';
import type { Audio } from './types.js';
import { decodeWav, isPcm16, parseWavLayout, WavError, type WavLayout } from './wav-decode.js';

/** Inputs below this many bytes (WAV) or samples (a conversion that only mixes channels) are handled inline. */
export const INLINE_LIMIT = 1 << 20;

/**
 * A conversion that resamples is handled inline only below this many samples. The windowed-sinc
 * filter costs about 0.18 µs an input sample (docs/performance.md, 60 s at 44.1 kHz in 472 ms), so
 * 1 MiB samples inline held the event loop for some 190 ms, and a realtime turn's 5 s at 24 kHz
 * for about 20 ms (scripts/bench-main-thread.mjs); 8192 samples is at most 1.5 ms, about what the
 * hop to a worker thread and back costs for audio that small.
 */
export const RESAMPLE_INLINE_LIMIT = 8192;

type Need = { sampleRate: number; channels: number };
/** What a job's reply carries: audio, or a base64 job's bytes. */
type Result = { audio: PlainAudio } | { bytes: Uint8Array };
type Pending = { resolve(result: Result): void; reject(err: Error): void };
type Job = AudioJob extends infer J ? (J extends { id: number } ? Omit<J, 'id'> : never) : never;

/** The error each failure code of the worker stands for, so a bad WAV stays a WavError (a 400). */
const FAILURES: Record<AudioFailure, (message: string) => Error> = {
  wav_invalid: (message) => new WavError(message),
  invalid_request: (message) => invalidRequest(message),
  audio_failed: (message) => new Error(`audio worker: ${message}`),
};

/** Offloaded jobs are the large ones: their results die with their request (release-memory.ts). */
function owed(bytes: number): void {
  memoryRelease.noteLargeBuffer(bytes);
}

class AudioPool {
  readonly #size = Math.max(1, Math.min(2, availableParallelism() - 1));
  readonly #idle: Worker[] = [];
  readonly #busy = new Map<Worker, number>();
  readonly #queue: { job: AudioJob; pending: Pending; transfer: ArrayBuffer[] }[] = [];
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;
  /** Jobs run on worker threads so far, for tests. */
  offloaded = 0;

  /** `transfer`: buffers of the job moved to the worker rather than copied (the caller's no more). */
  run(job: Job, transfer: ArrayBuffer[] = []): Promise<Result> {
    return new Promise<Result>((resolve, reject) => {
      const id = this.#nextId++;
      this.#queue.push({ job: { ...job, id } as AudioJob, pending: { resolve, reject }, transfer });
      this.#dispatch();
    });
  }

  async audio(job: Job): Promise<Audio> {
    const { audio } = (await this.run(job)) as { audio: PlainAudio };
    owed(plainBuffer(audio).byteLength);
    return fromPlain(audio);
  }

  #dispatch(): void {
    while (this.#queue.length > 0) {
      const worker = this.#idle.pop() ?? (this.#busy.size < this.#size ? this.#spawn() : undefined);
      if (!worker) return;
      const { job, pending, transfer } = this.#queue.shift()!;
      this.#pending.set(job.id, pending);
      this.#busy.set(worker, job.id);
      this.offloaded++;
      worker.ref();
      worker.postMessage(job, transfer);
    }
  }

  #spawn(): Worker {
    const worker = new Worker(new URL('./audio-worker.js', import.meta.url));
    worker.on('message', (reply: AudioReply) => {
      const pending = this.#pending.get(reply.id);
      this.#pending.delete(reply.id);
      this.#busy.delete(worker);
      // An idle worker must not keep the process alive.
      worker.unref();
      this.#idle.push(worker);
      if (reply.ok) pending?.resolve(reply);
      else pending?.reject(FAILURES[reply.code](reply.message));
      this.#dispatch();
    });
    worker.on('error', (err) => this.#lose(worker, err));
    worker.on('exit', (code) => this.#lose(worker, new Error(`audio worker exited with code ${code}`)));
    return worker;
  }

  /** A worker that died fails its job only; the next job gets a fresh worker. */
  #lose(worker: Worker, err: Error): void {
    const id = this.#busy.get(worker);
    this.#busy.delete(worker);
    const idle = this.#idle.indexOf(worker);
    if (idle >= 0) this.#idle.splice(idle, 1);
    if (id !== undefined) {
      this.#pending.get(id)?.reject(err);
      this.#pending.delete(id);
    }
    this.#dispatch();
  }
}

export const audioPool = new AudioPool();

/**
 * 16-bit PCM bytes up to this size are taken inline whatever their length: kept as PCM16, their
 * "decoding" is one copy (16 MiB in about 2 ms), cheaper than the copy that sending them to a
 * thread makes on this one (structured clone), plus the hop.
 */
export const PCM16_INLINE_LIMIT = 16 << 20;

/** `owned`: bytes nobody else holds, whose 16-bit samples may be read in place (decodeData). */
export async function decodeWavAsync(bytes: Uint8Array, owned = false): Promise<Audio> {
  if (bytes.length < INLINE_LIMIT) return decodeWav(bytes, owned);
  if (bytes.length < PCM16_INLINE_LIMIT && isPcm16(parseWavLayout(bytes, bytes.byteLength).format))
    return decodeWav(bytes, owned);
  return audioPool.audio({ kind: 'decode', bytes });
}

/** The samples of an open WAV file whose layout is known, decoded on a worker thread. */
export async function decodeWavFileAsync(fd: number, layout: WavLayout): Promise<Audio> {
  return audioPool.audio({ kind: 'decode-file', fd, layout });
}

export async function conformAudioAsync(audio: Audio, need: Need): Promise<Audio> {
  const resamples = audio.sampleRate !== need.sampleRate;
  if (!resamples && audio.channels === need.channels) return conformAudio(audio, need);
  if (audio.samples.length < (resamples ? RESAMPLE_INLINE_LIMIT : INLINE_LIMIT))
    return conformAudio(audio, need);
  return audioPool.audio({ kind: 'conform', audio: toPlain(audio), need });
}

/**
 * A base64 payload's characters (a JSON body's bytes) decoded on a worker thread: base64.ts's bytes
 * and errors. `movable`: the memory `literal` lies in is the caller's alone and read no more; it is
 * moved to the thread whole (`literal` is left empty), where otherwise the characters are copied.
 */
export async function decodeBase64Async(
  literal: Uint8Array,
  movable: boolean,
  field: string,
  maxBytes: number,
): Promise<Buffer> {
  // Moved, never cloned: a structured clone would copy the whole body the characters lie in.
  const own = movable ? literal : literal.slice();
  // Read before the move, which leaves `own` empty.
  const moved = own.buffer.byteLength;
  const job = { kind: 'base64', literal: own, field, maxBytes } as const;
  const { bytes } = (await audioPool.run(job, [own.buffer as ArrayBuffer])) as { bytes: Uint8Array };
  owed(moved + bytes.byteLength);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
