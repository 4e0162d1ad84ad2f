/** Worker-thread side of the audio pool: decodes and converts audio off the event loop. */
import { parentPort } from 'node:worker_threads';
import { conformAudio } from './convert.js';
import type { Audio } from './types.js';
import { decodeWav, WavError } from './wav-decode.js';

export type AudioJob =
  | { id: number; kind: 'decode'; bytes: Uint8Array }
  | { id: number; kind: 'conform'; audio: Audio; need: { sampleRate: number; channels: number } };

export type AudioReply =
  | { id: number; ok: true; audio: Audio }
  | { id: number; ok: false; wav: boolean; message: string };

parentPort?.on('message', (job: AudioJob) => {
  try {
    const audio = job.kind === 'decode' ? decodeWav(job.bytes) : conformAudio(job.audio, job.need);
    parentPort!.postMessage({ id: job.id, ok: true, audio } satisfies AudioReply, [
      audio.samples.buffer as ArrayBuffer,
    ]);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    parentPort!.postMessage({
      id: job.id,
      ok: false,
      wav: err instanceof WavError,
      message,
    } satisfies AudioReply);
  }
});
