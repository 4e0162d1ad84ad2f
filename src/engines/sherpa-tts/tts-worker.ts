/**
 * Runner of a sherpa-onnx OfflineTts over the model files: one session's, or every slot's at once
 * when the model's slots share the runner (isolation "model"); generateAsync runs each call on the
 * libuv pool, so they overlap, and each call carries its own speaker and speed. The family builds
 * the whole OfflineTts config (vits, kokoro, matcha, ...), so this file serves all.
 */
import { createRequire } from 'node:module';
import { engineData, serveJobs } from '../engine-port.js';
import { JobError, type JobFailure } from '../job-error.js';
import { textPieces } from './text-pieces.js';

export interface TtsJob {
  id: number;
  text: string;
  sid: number;
  speed: number;
  /** Speak the text in pieces that stay under this many tokens (Kokoro; see text-pieces.ts). */
  maxTokens?: number;
}

export type TtsReply = { id: number; ok: true; samples: Float32Array; sampleRate: number } | JobFailure;

interface OfflineTts {
  sampleRate: number;
  numSpeakers: number;
  generateAsync(request: { text: string; generationConfig: { sid: number; speed: number } }): Promise<{
    samples: Float32Array;
    sampleRate: number;
  }>;
}

/** What a request gets when the model made no audio from its text (e.g. every word out of lexicon). */
const NO_AUDIO =
  "input: the model produced no audio for this text; none of it could be turned into the model's tokens (words missing from its lexicon?)";

const sherpa = createRequire(import.meta.url)('sherpa-onnx-node') as {
  OfflineTts: new (config: unknown) => OfflineTts;
};
const tts = new sherpa.OfflineTts(engineData());

interface Audio {
  samples: Float32Array;
  sampleRate: number;
}

/** The audio of one piece of text, or undefined when sherpa made none of it. */
async function speak(text: string, sid: number, speed: number): Promise<Audio | undefined> {
  // The generationConfig form: the legacy {text, sid, speed} call crashes the process when
  // sherpa makes no audio (sherpa-onnx-node 1.13.8); this one throws instead. The addon's only
  // errors once its arguments are right (a TypeError otherwise, voxd's bug) are the two it raises
  // when generation gives nothing: "TTS generation failed" and "TTS generation produced no audio".
  try {
    const audio = await tts.generateAsync({ text, generationConfig: { sid, speed } });
    return audio.samples.length > 0 ? audio : undefined;
  } catch (err) {
    if (err instanceof TypeError) throw err;
    return undefined;
  }
}

serveJobs(
  async (job: TtsJob) => {
    if (job.sid < 0 || job.sid >= tts.numSpeakers) {
      throw new JobError(
        'invalid_voice',
        `voice: speaker ${job.sid} does not exist; this model has ${tts.numSpeakers} speaker(s)`,
      );
    }
    const pieces = job.maxTokens ? textPieces(job.text, job.maxTokens) : [job.text];
    // A piece with nothing sherpa can say (say, only an emoji) is skipped, as sherpa skips such words.
    const parts: Audio[] = [];
    for (const piece of pieces) {
      const part = await speak(piece, job.sid, job.speed);
      if (part) parts.push(part);
    }
    if (parts.length === 0) throw new JobError('no_audio', NO_AUDIO);
    // One buffer of voxd's own, which the reply moves to the session's thread instead of copying.
    const samples = new Float32Array(parts.reduce((n, p) => n + p.samples.length, 0));
    let at = 0;
    for (const part of parts) {
      samples.set(part.samples, at);
      at += part.samples.length;
    }
    return { samples, sampleRate: parts[0]!.sampleRate };
  },
  { concurrent: true },
);
