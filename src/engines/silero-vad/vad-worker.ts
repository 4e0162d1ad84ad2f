/** The engine of one silero VAD session, in its runner process: a sherpa-onnx Vad, whose calls are synchronous. */
import { engineData, serveJobs } from '../engine-port.js';
import type { JobFailure } from '../job-error.js';
import { floatSamples, type RunnerSamples } from '../runner-samples.js';
import { createDetector, type VadSettings } from './detect.js';

export type { VadSettings } from './detect.js';

export interface VadJob {
  id: number;
  /** 16 kHz mono. */
  samples: RunnerSamples;
  /** Request overrides of the load settings (a transcription's chunking_strategy sets both). */
  threshold?: number;
  minSilenceDuration?: number;
}

export type VadReply = { id: number; ok: true; segments: { start: number; end: number }[] } | JobFailure;

const settings = engineData<VadSettings>();
// A sherpa Vad fixes its settings when created, so each distinct override gets its own; the few
// kept are cheap (the model file is small) and a request pattern cannot grow them without bound.
const MAX_DETECTORS = 8;
const detectors = new Map<string, ReturnType<typeof createDetector>>();

function detectorFor(job: VadJob): ReturnType<typeof createDetector> {
  const threshold = job.threshold ?? settings.threshold;
  const minSilenceDuration = job.minSilenceDuration ?? settings.minSilenceDuration;
  const key = `${threshold}/${minSilenceDuration}`;
  let detect = detectors.get(key);
  if (!detect) {
    if (detectors.size >= MAX_DETECTORS) detectors.clear();
    detect = createDetector({ ...settings, threshold, minSilenceDuration });
    detectors.set(key, detect);
  }
  return detect;
}

serveJobs((job: VadJob) => ({ segments: detectorFor(job)(floatSamples(job.samples)) }));
