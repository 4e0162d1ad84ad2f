/**
 * Worker thread of one sherpa-onnx TTS session: its own OfflineTts over the model files. The
 * family builds the whole OfflineTts config (vits, kokoro, matcha, ...), so this file serves all.
 */
import { createRequire } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';

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

const sherpa = createRequire(import.meta.url)('sherpa-onnx-node') as {
  OfflineTts: new (config: unknown) => OfflineTts;
};
const tts = new sherpa.OfflineTts(workerData);
/** What sherpa-onnx-node throws when the text gave the model no tokens to speak. */
const NO_AUDIO = /generation failed|produced no audio/;

parentPort!.on('message', (job: TtsJob) => {
  try {
    if (job.sid < 0 || job.sid >= tts.numSpeakers) {
      throw new Error(
        `voice: speaker ${job.sid} does not exist; this model has ${tts.numSpeakers} speaker(s)`,
      );
    }
    // The generationConfig form, not {text, sid, speed}: when the text yields no tokens (say only
    // words outside a Kokoro lexicon), that older form crashes the process in sherpa-onnx-node
    // 1.13.8 (a segfault), while this one throws "TTS generation failed".
    let audio: { samples: Float32Array; sampleRate: number } | undefined;
    try {
      audio = tts.generate({ text: job.text, generationConfig: { sid: job.sid, speed: job.speed } });
    } catch (err) {
      if (!(err instanceof Error && NO_AUDIO.test(err.message))) throw err;
    }
    if (!audio || audio.samples.length === 0)
      throw new Error('input: the model found nothing it can speak in the text (no audio was produced)');
    const samples = Float32Array.from(audio.samples);
    parentPort!.postMessage(
      { id: job.id, ok: true, samples, sampleRate: audio.sampleRate } satisfies TtsReply,
      [samples.buffer],
    );
  } catch (err) {
    parentPort!.postMessage({
      id: job.id,
      ok: false,
      message: err instanceof Error ? err.message : String(err),
    } satisfies TtsReply);
  }
});
