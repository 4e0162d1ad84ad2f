/**
 * The engine of one classic_diar session, in its runner process: its own sherpa-onnx silero Vad
 * (synchronous calls), then the log-mel statistics embeddings and the clustering, all in that process.
 */
import { engineData, serveJobs } from '../engine-port.js';
import type { JobFailure } from '../job-error.js';
import { floatSamples, type RunnerSamples } from '../runner-samples.js';
import { createDetector, type VadSettings } from '../silero-vad/detect.js';
import { diarize, diarizeOnline, type Turn } from './diarize.js';

export interface DiarWorkerData {
  vad: VadSettings;
  /** Longest window embedded as one piece, in samples. */
  maxWindow: number;
}

export interface DiarJob {
  id: number;
  /** 16 kHz mono. */
  samples: RunnerSamples;
  numSpeakers?: number;
  threshold: number;
  /** Decide each segment as soon as it is heard, emitting `{ turns }` (the streaming variant). */
  online?: boolean;
}

export type DiarReply = { id: number; ok: true; turns: Turn[] } | JobFailure;

const settings = engineData<DiarWorkerData>();
const detect = createDetector(settings.vad);

serveJobs((job: DiarJob, emit) => {
  const options = { numSpeakers: job.numSpeakers, threshold: job.threshold, maxWindow: settings.maxWindow };
  const samples = floatSamples(job.samples);
  const segments = detect(samples);
  const turns = job.online
    ? diarizeOnline(samples, segments, options, (closed) => emit({ turns: closed }))
    : diarize(samples, segments, options);
  return { turns };
});
