/**
 * Worker thread of one classic_diar session: its own sherpa-onnx silero Vad (synchronous calls),
 * then the log-mel statistics embeddings and the clustering, all on this thread.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { createDetector, type VadSettings } from '../silero-vad/detect.js';
import { diarize, type Turn } from './diarize.js';

export interface DiarWorkerData {
  vad: VadSettings;
  /** Longest window embedded as one piece, in samples. */
  maxWindow: number;
}

export interface DiarJob {
  id: number;
  /** 16 kHz mono. */
  samples: Float32Array;
  numSpeakers?: number;
  threshold: number;
}

export type DiarReply = { id: number; ok: true; turns: Turn[] } | { id: number; ok: false; message: string };

const settings = workerData as DiarWorkerData;
const detect = createDetector(settings.vad);

parentPort!.on('message', (job: DiarJob) => {
  try {
    const turns = diarize(job.samples, detect(job.samples), {
      numSpeakers: job.numSpeakers,
      threshold: job.threshold,
      maxWindow: settings.maxWindow,
    });
    parentPort!.postMessage({ id: job.id, ok: true, turns } satisfies DiarReply);
  } catch (err) {
    parentPort!.postMessage({
      id: job.id,
      ok: false,
      message: err instanceof Error ? err.message : String(err),
    } satisfies DiarReply);
  }
});
