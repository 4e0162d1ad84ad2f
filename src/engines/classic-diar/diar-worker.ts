/**
 * Worker thread of one classic_diar session: its own sherpa-onnx silero Vad (synchronous calls),
 * then the log-mel statistics embeddings and the clustering, all on this thread.
 */
import { engineData, serveJobs } from '../engine-port.js';
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

const settings = engineData<DiarWorkerData>();
const detect = createDetector(settings.vad);

serveJobs((job: DiarJob) => {
  const turns = diarize(job.samples, detect(job.samples), {
    numSpeakers: job.numSpeakers,
    threshold: job.threshold,
    maxWindow: settings.maxWindow,
  });
  return { turns };
});
