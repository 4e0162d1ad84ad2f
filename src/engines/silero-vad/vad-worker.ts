/** Worker thread of one silero VAD session: a sherpa-onnx Vad, whose calls are synchronous. */
import { createRequire } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';
import { refineSegment } from './refine-segments.js';

export interface VadSettings {
  model: string;
  threshold: number;
  minSilenceDuration: number;
  minSpeechDuration: number;
  maxSpeechDuration: number;
}

export interface VadJob {
  id: number;
  /** 16 kHz mono. */
  samples: Float32Array;
}

export type VadReply =
  | { id: number; ok: true; segments: { start: number; end: number }[] }
  | { id: number; ok: false; message: string };

interface SherpaVad {
  acceptWaveform(samples: Float32Array): void;
  isEmpty(): boolean;
  front(external: boolean): { start: number; samples: Float32Array };
  pop(): void;
  flush(): void;
  reset(): void;
}

const WINDOW = 512;
const settings = workerData as VadSettings;
const sherpa = createRequire(import.meta.url)('sherpa-onnx-node') as {
  Vad: new (config: unknown, seconds: number) => SherpaVad;
};
const vad = new sherpa.Vad(
  {
    sileroVad: {
      model: settings.model,
      threshold: settings.threshold,
      minSilenceDuration: settings.minSilenceDuration,
      minSpeechDuration: settings.minSpeechDuration,
      maxSpeechDuration: settings.maxSpeechDuration,
      windowSize: WINDOW,
    },
    sampleRate: 16000,
    numThreads: 1,
    debug: false,
  },
  60,
);

function detect(samples: Float32Array): { start: number; end: number }[] {
  vad.reset();
  const segments: { start: number; end: number }[] = [];
  const drain = () => {
    while (!vad.isEmpty()) {
      const front = vad.front(false);
      segments.push(refineSegment(samples, front.start, front.start + front.samples.length));
      vad.pop();
    }
  };
  for (let i = 0; i < samples.length; i += WINDOW) {
    vad.acceptWaveform(samples.subarray(i, i + WINDOW));
    drain();
  }
  vad.flush();
  drain();
  return segments;
}

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
