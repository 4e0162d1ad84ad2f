/**
 * Worker thread of one sherpa-onnx TTS session: its own OfflineTts over the model files. The
 * family builds the whole OfflineTts config (vits, kokoro, matcha, ...), so this file serves all.
 */
import { createRequire } from 'node:module';
import { engineData, serveJobs } from '../engine-port.js';

export interface TtsJob {
  id: number;
  text: string;
  sid: number;
  speed: number;
}

export type TtsReply =
  | { id: number; ok: true; samples: Float32Array; sampleRate: number }
  | { id: number; ok: false; message: string };

interface OfflineTts {
  sampleRate: number;
  numSpeakers: number;
  generate(request: { text: string; generationConfig: { sid: number; speed: number } }): {
    samples: Float32Array;
    sampleRate: number;
  };
}

/** What a request gets when the model made no audio from its text (e.g. every word out of lexicon). */
const NO_AUDIO =
  "input: the model produced no audio for this text; none of it could be turned into the model's tokens (words missing from its lexicon?)";

const sherpa = createRequire(import.meta.url)('sherpa-onnx-node') as {
  OfflineTts: new (config: unknown) => OfflineTts;
};
const tts = new sherpa.OfflineTts(engineData());

serveJobs((job: TtsJob) => {
  if (job.sid < 0 || job.sid >= tts.numSpeakers) {
    throw new Error(`voice: speaker ${job.sid} does not exist; this model has ${tts.numSpeakers} speaker(s)`);
  }
  // The generationConfig form: the legacy {text, sid, speed} call crashes the process when
  // sherpa makes no audio (sherpa-onnx-node 1.13.8); this one throws instead.
  let audio: { samples: Float32Array; sampleRate: number };
  try {
    audio = tts.generate({ text: job.text, generationConfig: { sid: job.sid, speed: job.speed } });
  } catch (err) {
    if (err instanceof Error && /generation failed|no audio/.test(err.message)) throw new Error(NO_AUDIO);
    throw err;
  }
  if (audio.samples.length === 0) throw new Error(NO_AUDIO);
  return { samples: Float32Array.from(audio.samples), sampleRate: audio.sampleRate };
});
