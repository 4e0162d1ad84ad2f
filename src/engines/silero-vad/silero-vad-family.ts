/**
 * `silero_vad`: voice activity detection with the silero model, run by sherpa-onnx-node. `path`
 * may name another silero ONNX file; by default voxd uses the copy in assets/silero. Each session
 * is a worker thread with its own sherpa Vad (its calls are synchronous); sessions share the file.
 */
import { access } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { invalidRequest, VoxdError } from '../../errors.js';
import { inputSamples, ThreadEngineSession } from '../thread-session.js';
import type {
  EngineFamily,
  EngineRequest,
  EngineResult,
  LoadedModel,
  LoadSpec,
  ParamRow,
  RunContext,
} from '../types.js';
import type { VadJob, VadReply, VadSettings } from './vad-worker.js';

const WORKER_URL = new URL('./vad-worker.js', import.meta.url);
export const DEFAULT_SILERO_MODEL = fileURLToPath(
  new URL('../../../../assets/silero/silero_vad.onnx', import.meta.url),
);
const CAPACITY = 4;
const SAMPLE_RATE = 16000;

function number(
  options: Record<string, string>,
  key: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const raw = options[key];
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min || value > max) {
    throw invalidRequest(
      `load_options.${key}: "${raw}" is invalid; expected a number between ${min} and ${max}`,
    );
  }
  return value;
}

class SileroSession extends ThreadEngineSession<Omit<VadJob, 'id'>, VadReply> {
  constructor(id: string, settings: VadSettings) {
    super(id, WORKER_URL, settings);
  }

  async run(request: EngineRequest, { signal }: RunContext): Promise<EngineResult> {
    const samples = inputSamples(request, 'voice activity detection');
    const reply = await this.thread.call({ samples }, signal, [samples.buffer]);
    if (!reply.ok) throw new Error(reply.message);
    return {
      segments: reply.segments.map(({ start, end }) => ({
        start_sample: start,
        end_sample: end,
        confidence: 1,
      })),
    };
  }
}

export class SileroVadFamily implements EngineFamily {
  readonly name = 'silero_vad';
  readonly tasks = ['vad'] as const;
  readonly backends = ['cpu'] as const;
  readonly maxCapacity = CAPACITY;
  readonly params: readonly ParamRow[] = [];
  #sessions = 0;

  async estimateFootprint(): Promise<number> {
    return 30 * 1024 * 1024;
  }

  async load(spec: LoadSpec): Promise<LoadedModel> {
    const model = spec.path || DEFAULT_SILERO_MODEL;
    try {
      await access(model);
    } catch {
      throw new VoxdError(
        'E_INVALID_REQUEST',
        `model '${spec.modelId}': silero model file not found: ${model}`,
      );
    }
    const o = spec.loadOptions;
    const settings: VadSettings = {
      model,
      threshold: number(o, 'threshold', 0.5, 0.01, 0.99),
      minSilenceDuration: number(o, 'min_silence_ms', 200, 0, 60_000) / 1000,
      minSpeechDuration: number(o, 'min_speech_ms', 250, 0, 60_000) / 1000,
      maxSpeechDuration: number(o, 'max_speech_ms', 20_000, 1000, 600_000) / 1000,
    };
    return {
      capacity: CAPACITY,
      audioInput: { sampleRate: SAMPLE_RATE, channels: 1 },
      createSession: async () => new SileroSession(`${spec.modelId}#${++this.#sessions}`, settings),
      dispose: async () => {},
    };
  }
}
