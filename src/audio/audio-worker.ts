/** Worker-thread side of the audio pool: decodes and converts audio off the event loop. */
import { parentPort } from 'node:worker_threads';
import { VoxdError } from '../errors.js';
import { readFullySync } from '../util/read-fully.js';
import { base64BytesOf } from './base64.js';
import { conformAudio } from './convert.js';
import { decodePcm } from './pcm.js';
import { pcm16Audio } from './pcm16-audio.js';
import { type Audio, heldSamples } from './types.js';
import { decodeWav, isPcm16, WavError, type WavLayout } from './wav-decode.js';

export type AudioJob =
  | { id: number; kind: 'decode'; bytes: Uint8Array }
  | { id: number; kind: 'decode-file'; fd: number; layout: WavLayout }
  | { id: number; kind: 'conform'; audio: Audio; need: { sampleRate: number; channels: number } }
  /** A base64 payload's characters as a JSON body held them (base64.ts): its bytes. */
  | { id: number; kind: 'base64'; literal: Uint8Array; field: string; maxBytes: number };

export type AudioReply =
  | { id: number; ok: true; audio: Audio }
  | { id: number; ok: true; bytes: Uint8Array }
  | { id: number; ok: false; code: AudioFailure; message: string };

/**
 * What a failed job means, carried across the thread boundary so that the main thread rebuilds the
 * same kind of error (audio-pool.ts) instead of reading the message: `wav_invalid`, the input is not
 * a WAV file voxd can read (a 400 to the client); `audio_failed`, anything else (a server fault).
 */
export type AudioFailure = 'wav_invalid' | 'invalid_request' | 'audio_failed';

/** Sample bytes read per step: the file is never held whole, only its decoded samples. */
const PIECE_BYTES = 1 << 20;

/**
 * Decodes the samples of an open WAV file (the caller owns the descriptor and keeps it open until
 * the reply). Blocking reads are fine here: this thread does nothing else.
 */
function decodeFile(fd: number, layout: WavLayout): Audio {
  const { format, dataStart, dataBytes } = layout;
  const { sampleRate, channels } = format;
  if (isPcm16(format)) {
    // Kept as PCM16 (wav-decode.ts, decodeData): read straight into the samples' own memory.
    const pcm16 = new Int16Array(dataBytes / 2);
    readWhole(fd, new Uint8Array(pcm16.buffer), dataStart);
    return pcm16Audio(pcm16, sampleRate, channels);
  }
  const frameBytes = (format.bits / 8) * format.channels;
  const out = new Float32Array(layout.frames * format.channels);
  const piece = Buffer.allocUnsafe(Math.max(frameBytes, PIECE_BYTES - (PIECE_BYTES % frameBytes)));
  let done = 0;
  let offset = 0;
  while (done < dataBytes) {
    const want = Math.min(piece.length, dataBytes - done);
    readWhole(fd, piece.subarray(0, want), dataStart + done);
    decodePcm(piece.subarray(0, want), format, out, offset);
    offset += (want / frameBytes) * format.channels;
    done += want;
  }
  return { samples: out, sampleRate, channels };
}

/** Fills `into` from the file at `position`; a file that ends first is a bad WAV. */
function readWhole(fd: number, into: Uint8Array, position: number): void {
  if (readFullySync(fd, into, position) < into.byteLength)
    throw new WavError('the WAV file ended before its data');
}

function runJob(job: Exclude<AudioJob, { kind: 'base64' }>): Audio {
  if (job.kind === 'decode') return decodeWav(job.bytes);
  if (job.kind === 'decode-file') return decodeFile(job.fd, job.layout);
  return conformAudio(job.audio, job.need);
}

/** Input bytes of a job above which the worker collects its garbage once the reply is sent. */
const COLLECT_AFTER_BYTES = 16 * 1024 * 1024;

function inputBytes(job: AudioJob): number {
  if (job.kind === 'decode') return job.bytes.byteLength;
  if (job.kind === 'decode-file') return job.layout.dataBytes;
  if (job.kind === 'base64') return job.literal.byteLength;
  return heldSamples(job.audio).byteLength;
}

parentPort?.on('message', (job: AudioJob) => {
  try {
    if (job.kind === 'base64') {
      const { literal, field, maxBytes } = job;
      const decoded = base64BytesOf(literal, field, maxBytes);
      // Moved back, not copied, unless the bytes share a pooled block with others.
      const bytes =
        decoded.byteLength > Buffer.poolSize >>> 1
          ? new Uint8Array(decoded.buffer, decoded.byteOffset, decoded.byteLength)
          : new Uint8Array(decoded);
      parentPort!.postMessage({ id: job.id, ok: true, bytes } satisfies AudioReply, [
        bytes.buffer as ArrayBuffer,
      ]);
    } else {
      const audio = runJob(job);
      parentPort!.postMessage({ id: job.id, ok: true, audio } satisfies AudioReply, [
        heldSamples(audio).buffer as ArrayBuffer,
      ]);
    }
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const code =
      err instanceof WavError ? 'wav_invalid' : err instanceof VoxdError ? 'invalid_request' : 'audio_failed';
    parentPort!.postMessage({ id: job.id, ok: false, code, message } satisfies AudioReply);
  }
  // The job's copy of its input is garbage once this handler returns, and an idle worker would
  // never collect it. `gc` is there when the main thread exposed it (util/release-memory.ts).
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc && inputBytes(job) >= COLLECT_AFTER_BYTES) setImmediate(gc);
});
