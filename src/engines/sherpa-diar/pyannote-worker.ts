/** The engine of one pyannote diarization session, in its runner process: its own sherpa-onnx OfflineSpeakerDiarization. */
import { createRequire } from 'node:module';
import { engineData, serveJobs } from '../engine-port.js';
import type { JobFailure } from '../job-error.js';
import { floatSamples, type RunnerSamples } from '../runner-samples.js';

export interface PyannoteSettings {
  segmentation: string;
  embedding: string;
  threshold: number;
  minDurationOn: number;
  minDurationOff: number;
}

export interface PyannoteJob {
  id: number;
  /** 16 kHz mono. */
  samples: RunnerSamples;
  /** Known speaker count, or -1 to find it by the clustering threshold. */
  numSpeakers: number;
}

export type PyannoteReply =
  | { id: number; ok: true; turns: { start: number; end: number; speaker: number }[] }
  | JobFailure;

interface Diarizer {
  setConfig(config: unknown): void;
  process(samples: Float32Array): { start: number; end: number; speaker: number }[];
}

const settings = engineData<PyannoteSettings>();
const sherpa = createRequire(import.meta.url)('sherpa-onnx-node') as {
  OfflineSpeakerDiarization: new (config: unknown) => Diarizer;
};
const clustering = (numSpeakers: number) => ({ numClusters: numSpeakers, threshold: settings.threshold });
const diarizer = new sherpa.OfflineSpeakerDiarization({
  segmentation: { pyannote: { model: settings.segmentation }, numThreads: 1 },
  embedding: { model: settings.embedding, numThreads: 1 },
  clustering: clustering(-1),
  minDurationOn: settings.minDurationOn,
  minDurationOff: settings.minDurationOff,
});

serveJobs((job: PyannoteJob) => {
  diarizer.setConfig({ clustering: clustering(job.numSpeakers) });
  return { turns: job.samples.length > 0 ? diarizer.process(floatSamples(job.samples)) : [] };
});
