/**
 * The sherpa-onnx offline recognizers (NeMo CTC, Whisper, Canary, Parakeet TDT, SenseVoice): one
 * family object per model type, differing only in the files they need and the recognizer config
 * built from them. Each session is a worker thread with its own OfflineRecognizer.
 */
import type { OptionMap } from '../../config/types.js';
import { type FileRole, type FolderFiles, findModelFiles, precisionOption } from '../sherpa-model-folder.js';
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
import type { RecognizerJob, RecognizerReply } from './recognizer-worker.js';

const WORKER_URL = new URL('./recognizer-worker.js', import.meta.url);
const CAPACITY = 4;
const SAMPLE_RATE = 16000;

/** What one request changes: `modelConfig` entries to decode it with, and a language to report. */
export interface RequestSettings {
  /** Replaces these `modelConfig` entries (whole entries, e.g. `whisper`) for this request. */
  modelConfig?: Record<string, unknown>;
  /** Reported when the recognizer reports no language (e.g. an English-only model). */
  language?: string;
}

/** How the input audio is cut and padded before it reaches the recognizer. */
interface AudioLimits {
  windowSamples?: number;
  minSamples?: number;
}

class RecognizerSession extends ThreadEngineSession<Omit<RecognizerJob, 'id'>, RecognizerReply> {
  constructor(
    id: string,
    config: unknown,
    private readonly settings: (request: EngineRequest) => RequestSettings,
    private readonly limits: AudioLimits,
  ) {
    super(id, WORKER_URL, config);
  }

  async run(request: EngineRequest, { signal }: RunContext): Promise<EngineResult> {
    const settings = this.settings(request);
    const samples = inputSamples(request, 'speech recognition');
    const job = {
      samples,
      ...this.limits,
      ...(settings.modelConfig ? { modelConfig: settings.modelConfig } : {}),
    };
    const reply = await this.thread.call(job, signal, [samples.buffer]);
    if (!reply.ok) throw new Error(reply.message);
    const language = reply.lang || settings.language;
    return { text: reply.text, ...(language ? { language } : {}) };
  }
}

/** One sherpa model type. `M` is what `prepare` learns from the files (e.g. model metadata). */
export interface RecognizerType<R extends string, M = undefined> {
  /** The config `family` name, e.g. `whisper_asr`. */
  name: string;
  /** The files of a model folder, by role. */
  files: Record<R, FileRole>;
  /** Reads what the type must know about the files before it configures them (a 400 for a bad folder). */
  prepare?(files: FolderFiles<R>, loadOptions: OptionMap, modelId: string): Promise<M>;
  /** The `modelConfig` entries of this model type (tokens is added), e.g. `{ whisper: {...} }`. */
  modelConfig(
    files: FolderFiles<R>,
    loadOptions: OptionMap,
    modelId: string,
    prepared: M,
  ): Record<string, unknown>;
  /** Per-request settings (e.g. Whisper's language), checked before the request runs (a 400 names a bad value). */
  request?(request: EngineRequest, prepared: M): RequestSettings;
  /** The most seconds one decode takes; longer audio is decoded in consecutive windows, texts joined by a space. */
  windowSeconds?: number;
  /** The fewest samples a decode may get (shorter audio crashes some models); shorter input is padded with silence. */
  minSamples?: number;
  params?: readonly ParamRow[];
}

export class SherpaRecognizerFamily<R extends string, M = undefined> implements EngineFamily {
  readonly tasks = ['asr'] as const;
  readonly backends = ['cpu'] as const;
  readonly maxCapacity = CAPACITY;
  readonly name: string;
  readonly params: readonly ParamRow[];
  #sessions = 0;

  constructor(private readonly type: RecognizerType<R | 'tokens', M>) {
    this.name = type.name;
    this.params = type.params ?? [];
  }

  async load(spec: LoadSpec): Promise<LoadedModel> {
    const files = await findModelFiles(
      spec.modelId,
      this.name,
      spec.path,
      this.type.files,
      precisionOption(spec.modelId, spec.loadOptions),
    );
    const prepared = (await this.type.prepare?.(files, spec.loadOptions, spec.modelId)) as M;
    const config = {
      featConfig: { sampleRate: SAMPLE_RATE, featureDim: 80 },
      modelConfig: {
        ...this.type.modelConfig(files, spec.loadOptions, spec.modelId, prepared),
        tokens: files.tokens,
        numThreads: 1,
        debug: 0,
      },
    };
    const settings = (request: EngineRequest) => this.type.request?.(request, prepared) ?? {};
    const { windowSeconds, minSamples } = this.type;
    const limits: AudioLimits = {
      ...(windowSeconds ? { windowSamples: Math.round(windowSeconds * SAMPLE_RATE) } : {}),
      ...(minSamples ? { minSamples } : {}),
    };
    return {
      capacity: CAPACITY,
      audioInput: { sampleRate: SAMPLE_RATE, channels: 1 },
      createSession: async () =>
        new RecognizerSession(`${spec.modelId}#${++this.#sessions}`, config, settings, limits),
      dispose: async () => {},
    };
  }
}
