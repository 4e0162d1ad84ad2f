/** Worker thread of one Piper/VITS session: its own sherpa-onnx OfflineTts over the model folder. */
import { createRequire } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';

export interface VitsFiles {
  model: string;
  tokens: string;
  dataDir: string;
}

export interface VitsJob {
  id: number;
  text: string;
  sid: number;
  speed: number;
}

export type VitsReply =
  | { id: number; ok: true; samples: Float32Array; sampleRate: number }
  | { id: number; ok: false; message: string };

interface OfflineTts {
  sampleRate: number;
  numSpeakers: number;
  generate(request: { text: string; sid: number; speed: number }): {
    samples: Float32Array;
    sampleRate: number;
  };
}

const files = workerData as VitsFiles;
const sherpa = createRequire(import.meta.url)('sherpa-onnx-node') as {
  OfflineTts: new (config: unknown) => OfflineTts;
};
const tts = new sherpa.OfflineTts({
  model: {
    vits: { model: files.model, tokens: files.tokens, dataDir: files.dataDir },
    numThreads: 1,
    debug: false,
  },
  maxNumSentences: 1,
});

parentPort!.on('message', (job: VitsJob) => {
  try {
    if (job.sid < 0 || job.sid >= tts.numSpeakers) {
      throw new Error(
        `voice: speaker ${job.sid} does not exist; this model has ${tts.numSpeakers} speaker(s)`,
      );
    }
    const audio = tts.generate({ text: job.text, sid: job.sid, speed: job.speed });
    const samples = Float32Array.from(audio.samples);
    parentPort!.postMessage(
      { id: job.id, ok: true, samples, sampleRate: audio.sampleRate } satisfies VitsReply,
      [samples.buffer],
    );
  } catch (err) {
    parentPort!.postMessage({
      id: job.id,
      ok: false,
      message: err instanceof Error ? err.message : String(err),
    } satisfies VitsReply);
  }
});
