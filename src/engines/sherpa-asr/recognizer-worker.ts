/**
 * Runner of a sherpa-onnx offline recognizer: one OfflineRecognizer (the weights, once) serving
 * one session's jobs, or every slot's jobs at once when the model's slots share the runner
 * (isolation "model"). Decodes run with decodeAsync on the libuv pool, each on its own stream, so
 * they overlap; a job with its own recognizer settings waits for the others (SettingsGate).
 */
import { createRequire } from 'node:module';
import { engineData, serveJobs } from '../engine-port.js';
import type { JobFailure } from '../job-error.js';
import { floatSamples, type RunnerSamples } from '../runner-samples.js';
import { SettingsGate } from '../settings-gate.js';

const SAMPLE_RATE = 16000;

export interface RecognizerJob {
  id: number;
  /** 16 kHz mono. */
  samples: RunnerSamples;
  /** Per-request settings sherpa reads from the stream (OfflineStream.setOption), e.g. SenseVoice's use_itn. */
  streamOptions?: Record<string, string>;
  /** The recognizer config for this job when a request changed it (absent: the loaded one). */
  config?: unknown;
  /** Decode in consecutive windows of at most this many samples, joining the texts (Whisper: 30 s). */
  windowSamples?: number;
  /** Pad each window with silence to at least this many samples (shorter audio crashes some models). */
  minSamples?: number;
}

/** Per-token details of a result, where the model type gives them (empty arrays otherwise). */
export interface RecognizerTokens {
  /** Token texts as sherpa prints them (BPE's word mark `▁` already a space). */
  tokens: string[];
  /** Start of each token, seconds from the start of the input. */
  timestamps: number[];
  /** Length of each token, seconds (TDT models). */
  durations: number[];
  /** Log-probability of each token. */
  logProbs: number[];
}

export type RecognizerReply =
  | ({ id: number; ok: true; text: string; lang: string } & RecognizerTokens)
  | JobFailure;

/**
 * Audio shorter than one 10 ms feature hop gives a model zero feature frames, and several encoders
 * then throw inside onnxruntime, which sherpa does not catch: that aborts the whole process. A
 * model type that cannot take even that pads (`minSamples`); the rest answer such input with ''.
 */
const MIN_SAMPLES = 160;

interface Stream {
  acceptWaveform(wave: { samples: Float32Array; sampleRate: number }): void;
  setOption(key: string, value: string): void;
}
interface Recognition {
  text: string;
  lang?: string;
  tokens?: string[];
  timestamps?: number[];
  durations?: number[];
  ys_log_probs?: number[];
}
interface Recognizer {
  createStream(): Stream;
  decodeAsync(stream: Stream): Promise<Recognition>;
  setConfig(config: unknown): void;
}

const sherpa = createRequire(import.meta.url)('sherpa-onnx-node') as {
  OfflineRecognizer: new (config: unknown) => Recognizer;
};
// workerData is the recognizer config the family built (model files and options).
const loadedConfig = engineData<unknown>();
const recognizer = new sherpa.OfflineRecognizer(loadedConfig);
const loaded = JSON.stringify(loadedConfig);
// setConfig only when a job's settings differ from the applied ones, and never under a running decode.
const gate = new SettingsGate<unknown>((config) => recognizer.setConfig(config), loaded);

function windows(samples: Float32Array, size: number | undefined): Float32Array[] {
  if (!size || samples.length <= size) return [samples];
  const out: Float32Array[] = [];
  for (let at = 0; at < samples.length; at += size) out.push(samples.subarray(at, at + size));
  return out;
}

function padded(samples: Float32Array, min: number): Float32Array {
  if (samples.length >= min) return samples;
  const out = new Float32Array(min);
  out.set(samples);
  return out;
}

async function recognize(job: RecognizerJob): Promise<{ text: string; lang: string } & RecognizerTokens> {
  const result = { text: '', lang: '', tokens: [], timestamps: [], durations: [], logProbs: [] } as {
    text: string;
    lang: string;
  } & RecognizerTokens;
  const minSamples = job.minSamples ?? 0;
  if (!minSamples && job.samples.length < MIN_SAMPLES) return result;
  const config = job.config ?? loadedConfig;
  const key = job.config === undefined ? loaded : JSON.stringify(job.config);
  const texts: string[] = [];
  let offset = 0;
  for (const window of windows(floatSamples(job.samples), job.windowSamples)) {
    const stream = recognizer.createStream();
    for (const [key, value] of Object.entries(job.streamOptions ?? {})) stream.setOption(key, value);
    stream.acceptWaveform({ samples: padded(window, minSamples), sampleRate: SAMPLE_RATE });
    const part = await gate.run(key, config, () => recognizer.decodeAsync(stream));
    const text = part.text.trim();
    if (text) texts.push(text);
    result.lang ||= part.lang ?? '';
    result.tokens.push(...(part.tokens ?? []));
    result.timestamps.push(...(part.timestamps ?? []).map((t) => t + offset / SAMPLE_RATE));
    result.durations.push(...(part.durations ?? []));
    result.logProbs.push(...(part.ys_log_probs ?? []));
    offset += window.length;
  }
  result.text = texts.join(' ');
  return result;
}

serveJobs(recognize, { concurrent: true });
