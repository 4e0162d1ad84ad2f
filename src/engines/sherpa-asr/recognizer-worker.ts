/** Worker thread of one sherpa-onnx offline recognizer session (its decode calls are synchronous here). */
import { createRequire } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';

export interface RecognizerJob {
  id: number;
  /** 16 kHz mono. */
  samples: Float32Array;
  /** `modelConfig` entries replacing the loaded ones for this job (set with setConfig). */
  modelConfig?: Record<string, unknown>;
  /** Decode in consecutive windows of at most this many samples, joining the texts. */
  windowSamples?: number;
  /** Pad each window with silence to at least this many samples. */
  minSamples?: number;
}

export type RecognizerReply =
  | { id: number; ok: true; text: string; lang: string }
  | { id: number; ok: false; message: string };

interface Stream {
  acceptWaveform(wave: { samples: Float32Array; sampleRate: number }): void;
}
interface Recognizer {
  createStream(): Stream;
  decode(stream: Stream): void;
  getResult(stream: Stream): { text: string; lang?: string };
  setConfig(config: unknown): void;
}
interface RecognizerConfig {
  modelConfig: Record<string, unknown>;
}

const sherpa = createRequire(import.meta.url)('sherpa-onnx-node') as {
  OfflineRecognizer: new (config: unknown) => Recognizer;
};
// workerData is the recognizer config the family built (model files and options).
const loaded = workerData as RecognizerConfig;
const recognizer = new sherpa.OfflineRecognizer(loaded);
// The modelConfig entries now set, as JSON ('' while the loaded config is in force).
let applied = '';

function configure(entries: Record<string, unknown> | undefined): void {
  const key = entries ? JSON.stringify(entries) : '';
  if (key === applied) return;
  recognizer.setConfig({ ...loaded, modelConfig: { ...loaded.modelConfig, ...entries } });
  applied = key;
}

function windows(samples: Float32Array, size: number | undefined): Float32Array[] {
  if (!size || samples.length <= size) return [samples];
  const out: Float32Array[] = [];
  for (let at = 0; at < samples.length; at += size) out.push(samples.slice(at, at + size));
  return out;
}

function padded(samples: Float32Array, min: number | undefined): Float32Array {
  if (!min || samples.length >= min) return samples;
  const out = new Float32Array(min);
  out.set(samples);
  return out;
}

function recognize(job: RecognizerJob): { text: string; lang: string } {
  configure(job.modelConfig);
  const texts: string[] = [];
  let lang = '';
  for (const window of windows(job.samples, job.windowSamples)) {
    const stream = recognizer.createStream();
    stream.acceptWaveform({ samples: padded(window, job.minSamples), sampleRate: 16000 });
    recognizer.decode(stream);
    const result = recognizer.getResult(stream);
    const text = result.text.trim();
    if (text) texts.push(text);
    lang ||= result.lang ?? '';
  }
  return { text: texts.join(' '), lang };
}

parentPort!.on('message', (job: RecognizerJob) => {
  try {
    parentPort!.postMessage({ id: job.id, ok: true, ...recognize(job) } satisfies RecognizerReply);
  } catch (err) {
    parentPort!.postMessage({
      id: job.id,
      ok: false,
      message: err instanceof Error ? err.message : String(err),
    } satisfies RecognizerReply);
  }
});
