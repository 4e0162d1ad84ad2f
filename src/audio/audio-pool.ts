/**
 * Decoding and resampling long audio takes long enough to stall every other request, so work above
 * a small size runs on a pool of worker threads; small inputs are converted inline, where a thread
 * hop would cost more than the work.
 */
import { availableParallelism } from 'node:os';
import { invalidField, invalidRequest, VoxdError } from '../errors.js';
import type { AbortSource } from '../util/lazy-abort.js';
import { memoryRelease } from '../util/release-memory.js';
import type { AudioFailure, AudioJob, AudioReply } from './audio-worker.js';
import { base64BytesOf } from './base64.js';
import { conformAudio } from './convert.js';
import { type Audio, heldSamples } from './types.js';
import { decodeWav, isPcm16, parseWavLayout, WavError, type WavLayout } from './wav-decode.js';
import { WorkerPool } from './worker-pool.js';

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

/** Threads: one or two, leaving a core to the event loop. */
export const AUDIO_THREADS = Math.max(1, Math.min(2, availableParallelism() - 1));

/**
 * Jobs that may wait for a thread. Only inputs too long to convert inline come here, and the
 * longest measured (60 s at 44.1 kHz, resampled in 472 ms: docs/performance.md) keep a thread
 * about half a second, so 64 waiting a thread is a backlog of about 30 s at worst, a tenth of the
 * default busy_timeout_ms. A queue longer than that means the threads cannot keep up, which a
 * prompt 503 tells a client better than a long wait.
 */
export const AUDIO_MAX_QUEUE = 64 * AUDIO_THREADS;

export const audioPool = new WorkerPool<Job, AudioReply>({
  url: new URL('./audio-worker.js', import.meta.url),
  size: AUDIO_THREADS,
  maxQueue: AUDIO_MAX_QUEUE,
  name: 'audio worker pool',
  failure: (reply) => {
    const { code, message } = reply as Extract<AudioReply, { ok: false }>;
    return FAILURES[code](message);
  },
});

async function offloadAudio(job: Job, signal: AbortSource | undefined): Promise<Audio> {
  const { audio } = (await audioPool.run(job, { signal })) as { audio: Audio };
  owed(heldSamples(audio).byteLength);
  return audio;
}

/**
 * 16-bit PCM bytes up to this size are taken inline whatever their length: kept as PCM16, their
 * "decoding" is one copy (16 MiB in about 2 ms), cheaper than the copy that sending them to a
 * thread makes on this one (structured clone), plus the hop.
 */
export const PCM16_INLINE_LIMIT = 16 << 20;

/**
 * `owned`: bytes nobody else holds, whose 16-bit samples may be read in place (decodeData).
 * `signal`: the caller going away before a thread takes the job (then it never runs).
 */
export async function decodeWavAsync(bytes: Uint8Array, owned = false, signal?: AbortSource): Promise<Audio> {
  if (bytes.length < INLINE_LIMIT) return decodeWav(bytes, owned);
  if (bytes.length < PCM16_INLINE_LIMIT && isPcm16(parseWavLayout(bytes, bytes.byteLength).format))
    return decodeWav(bytes, owned);
  return offloadAudio({ kind: 'decode', bytes }, signal);
}

/**
 * The samples of an open WAV file whose layout is known, decoded on a worker thread. The caller
 * keeps the file open until this settles (a job already on its thread runs to its end).
 */
export async function decodeWavFileAsync(
  fd: number,
  layout: WavLayout,
  signal?: AbortSource,
): Promise<Audio> {
  return offloadAudio({ kind: 'decode-file', fd, layout }, signal);
}

/** conformAudio, on a thread for long inputs; `signal` as for decodeWavAsync. */
export async function conformAudioAsync(audio: Audio, need: Need, signal?: AbortSource): Promise<Audio> {
  const resamples = audio.sampleRate !== need.sampleRate;
  if (!resamples && audio.channels === need.channels) return conformAudio(audio, need);
  if (heldSamples(audio).length < (resamples ? RESAMPLE_INLINE_LIMIT : INLINE_LIMIT))
    return conformAudio(audio, need);
  return offloadAudio({ kind: 'conform', audio, need }, signal);
}

/**
 * A base64 payload's characters (a JSON body's bytes) decoded, on a worker thread when they would
 * make INLINE_LIMIT bytes or more: base64.ts's bytes and errors. `movable`: the memory `literal`
 * lies in is the caller's alone and read no more; it is moved to the thread whole (`literal` is
 * left empty), where otherwise the characters are copied.
 */
export async function decodeBase64Async(
  literal: Uint8Array,
  movable: boolean,
  field: string,
  maxBytes: number,
  signal?: AbortSource,
): Promise<Buffer> {
  // Short payloads are decoded here: a piece at a time it is less work than the hop to a thread.
  if ((literal.byteLength * 3) / 4 < INLINE_LIMIT) return base64BytesOf(literal, field, maxBytes);
  // Moved, never cloned: a structured clone would copy the whole body the characters lie in.
  const own = movable ? literal : literal.slice();
  // Read before the move, which leaves `own` empty.
  const moved = own.buffer.byteLength;
  const job = { kind: 'base64', literal: own, field, maxBytes } as const;
  const { bytes } = (await audioPool
    .run(job, { signal, transfer: [own.buffer as ArrayBuffer] })
    .catch((err: unknown) => {
      // The refusal is base64.ts's, about `field`; the thread boundary carried its words only.
      throw err instanceof VoxdError && err.code === 'E_INVALID_REQUEST' && !signal?.aborted
        ? invalidField(field, err.message, err)
        : err;
    })) as { bytes: Uint8Array };
  owed(moved + bytes.byteLength);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
