/** Worker thread of one silero VAD session: a sherpa-onnx Vad, whose calls are synchronous. */
import { parentPort, workerData } from 'node:worker_threads';
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

const detect = createDetector(workerData as VadSettings);

parentPort!.on('message', (job: VadJob) => {
  try {
    parentPort!.postMessage({ id: job.id, ok: true, segments: detect(job.samples) } satisfies VadReply);
  } catch (err) {
    parentPort!.postMessage({
      id: job.id,
      ok: false,
      message: err instanceof Error ? err.message : String(err),
    } satisfies VadReply);
  }
});
