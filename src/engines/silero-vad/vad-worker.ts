/** Worker thread of one silero VAD session: a sherpa-onnx Vad, whose calls are synchronous. */
import { engineData, serveJobs } from '../engine-port.js';
import { createDetector, type VadSettings } from './detect.js';

export type { VadSettings } from './detect.js';

export interface VadJob {
  id: number;
  /** 16 kHz mono. */
  samples: Float32Array;
}

export type VadReply =
  | { id: number; ok: true; segments: { start: number; end: number }[] }
  | { id: number; ok: false; message: string };

const detect = createDetector(engineData<VadSettings>());

serveJobs((job: VadJob) => ({ segments: detect(job.samples) }));
