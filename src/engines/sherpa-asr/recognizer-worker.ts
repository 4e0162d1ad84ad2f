/** Worker thread of one sherpa-onnx offline recognizer session (its decode calls are synchronous here). */
import { createRequire } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';

export interface RecognizerJob {
  id: number;
  /** 16 kHz mono. */
  samples: Float32Array;
  /** Per-request settings sherpa reads from the stream (OfflineStream.setOption), e.g. SenseVoice's use_itn. */
  streamOptions?: Record<string, string>;
  /** The recognizer config for this job when a request changed it (absent: the loaded one). */
  config?: unknown;
}

/** Per-token details of a result, where the model type gives them (empty arrays otherwise). */
export interface RecognizerTokens {
  /** Token texts as sherpa prints them (BPE's word mark `▁` already a space). */
  tokens: string[];
  /** Start of each token, seconds. */
  timestamps: number[];
  /** Length of each token, seconds (TDT models). */
  durations: number[];
  /** Log-probability of each token. */
  logProbs: number[];
}

export type RecognizerReply =
  | ({ id: number; ok: true; text: string; lang: string } & RecognizerTokens)
  | { id: number; ok: false; message: string };

/**
 * Audio shorter than one 10 ms feature hop gives a model zero feature frames, and several encoders
 * then throw inside onnxruntime, which sherpa does not catch: that aborts the whole process.
 */
const MIN_SAMPLES = 160;
const NOTHING: RecognizerTokens = { tokens: [], timestamps: [], durations: [], logProbs: [] };

interface Stream {
  acceptWaveform(wave: { samples: Float32Array; sampleRate: number }): void;
  setOption(key: string, value: string): void;
}
interface Recognizer {
  createStream(): Stream;
  decode(stream: Stream): void;
  getResult(stream: Stream): {
    text: string;
    lang?: string;
    tokens?: string[];
    timestamps?: number[];
    durations?: number[];
    ys_log_probs?: number[];
  };
  setConfig(config: unknown): void;
}

const sherpa = createRequire(import.meta.url)('sherpa-onnx-node') as {
  OfflineRecognizer: new (config: unknown) => Recognizer;
};
// workerData is the recognizer config the family built (model files and options).
const recognizer = new sherpa.OfflineRecognizer(workerData);
const loaded = JSON.stringify(workerData);
let applied = loaded;

parentPort!.on('message', (job: RecognizerJob) => {
  if (job.samples.length < MIN_SAMPLES) {
    parentPort!.postMessage({
      id: job.id,
      ok: true,
      text: '',
      lang: '',
      ...NOTHING,
    } satisfies RecognizerReply);
    return;
  }
  try {
    // setConfig only when the settings differ, and back to the loaded ones after a patched request.
    const wanted = job.config === undefined ? loaded : JSON.stringify(job.config);
    if (wanted !== applied) {
      recognizer.setConfig(job.config ?? workerData);
      applied = wanted;
    }
    const stream = recognizer.createStream();
    for (const [key, value] of Object.entries(job.streamOptions ?? {})) stream.setOption(key, value);
    stream.acceptWaveform({ samples: job.samples, sampleRate: 16000 });
    recognizer.decode(stream);
    const result = recognizer.getResult(stream);
    parentPort!.postMessage({
      id: job.id,
      ok: true,
      text: result.text.trim(),
      lang: result.lang ?? '',
      tokens: result.tokens ?? [],
      timestamps: result.timestamps ?? [],
      durations: result.durations ?? [],
      logProbs: result.ys_log_probs ?? [],
    } satisfies RecognizerReply);
  } catch (err) {
    parentPort!.postMessage({
      id: job.id,
      ok: false,
      message: err instanceof Error ? err.message : String(err),
    } satisfies RecognizerReply);
  }
});
