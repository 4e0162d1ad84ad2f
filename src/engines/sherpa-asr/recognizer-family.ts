/**
 * The sherpa-onnx offline recognizers (NeMo CTC, Whisper, Canary, Parakeet TDT, SenseVoice): one
 * family object per model type, differing only in the files they need and the recognizer config
 * built from them. By default (isolation "model") one runner process holds the model's one
 * OfflineRecognizer and its slots' decodes run on it concurrently; isolation "session" gives each
 * slot its own runner and recognizer.
 */
import type { OptionMap } from '../../config/types.js';
import { CpuFamily, INPUT_RATE } from '../cpu-family.js';
import { inputSamples, WorkerEngineSession } from '../engine-worker.js';
import {
  type FileRole,
  type FolderFiles,
  findModelFiles,
  precisionOption,
  recogniseSpec,
} from '../sherpa-model-folder.js';
import type { EngineRequest, EngineResult, LoadSpec, ParamRow, RunContext, Word } from '../types.js';
import type { RecognizerJob, RecognizerReply, RecognizerTokens } from './recognizer-worker.js';

const WORKER_URL = new URL('./recognizer-worker.js', import.meta.url);

/** modelConfig entries to change for one request, merged one level deep (`{ canary: { srcLang } }`). */
export type ConfigPatch = Record<string, Record<string, unknown>>;

/** What one request changes: recognizer settings (sherpa's setConfig) and stream options (setOption). */
export interface RequestSettings {
  config?: ConfigPatch;
  stream?: Record<string, string>;
  /** Reported when the recognizer reports no language (e.g. an English-only model). */
  language?: string;
}

/** How the input audio is cut and padded before it reaches the recognizer. */
interface AudioLimits {
  windowSamples?: number;
  minSamples?: number;
}

interface RecognizerConfig {
  modelConfig: Record<string, unknown>;
}

type Job = Omit<RecognizerJob, 'id'>;

/** What a model's sessions share: its recognizer config, and how a request changes it. */
interface SessionSettings {
  config: RecognizerConfig;
  requestSettings: (request: EngineRequest) => RequestSettings | undefined;
  words: RecognizerType<string>['words'];
  limits: AudioLimits;
}

class RecognizerSession extends WorkerEngineSession<Job, RecognizerReply, SessionSettings> {
  async run(request: EngineRequest, { signal }: RunContext): Promise<EngineResult> {
    // Settings first, so a bad option is a 400 before the audio is copied or any engine work.
    const { config, requestSettings, words: wordsOf, limits } = this.settings;
    const settings = requestSettings(request);
    const samples = inputSamples(request, 'speech recognition');
    const job = {
      samples,
      ...limits,
      ...(settings?.config ? { config: patched(config, settings.config) } : {}),
      ...(settings?.stream ? { streamOptions: settings.stream } : {}),
    };
    const reply = await this.job(job, signal);
    const language = languageCode(reply.lang) ?? settings?.language;
    const words = wordsOf?.(reply, samples.length);
    return { text: reply.text, ...(language ? { language } : {}), ...(words ? { words } : {}) };
  }
}

/**
 * A plain language code from sherpa's `lang`, which SenseVoice tags as `<|en|>`; its
 * `<|nospeech|>` means no language was heard.
 */
export function languageCode(lang: string): string | undefined {
  const code = lang.replace(/^<\|(.*)\|>$/, '$1').trim();
  return code && code !== 'nospeech' ? code : undefined;
}

function patched(config: RecognizerConfig, patch: ConfigPatch): RecognizerConfig {
  const modelConfig = { ...config.modelConfig };
  for (const [key, entries] of Object.entries(patch))
    modelConfig[key] = { ...(modelConfig[key] as Record<string, unknown>), ...entries };
  return { ...config, modelConfig };
}

/** One sherpa model type. `M` is what `prepare` learns from the files (e.g. model metadata). */
export interface RecognizerType<R extends string, M = void> {
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
  /**
   * What a request may change, checked in the caller's thread (throws a 400 naming a bad value):
   * recognizer settings, which the worker applies with sherpa's setConfig and restores for the next
   * request without them, and stream options (OfflineStream.setOption). Absent: requests change nothing.
   */
  requestSettings?(
    request: EngineRequest,
    loadOptions: OptionMap,
    modelId: string,
    prepared: M,
  ): RequestSettings | undefined;
  /** Top-level recognizer config entries (e.g. `decodingMethod`) laid over the defaults. */
  recognizerConfig?(files: FolderFiles<R>, loadOptions: OptionMap, modelId: string): Record<string, unknown>;
  /** Word timings from a result's tokens (`samples`: the input length); without it, no words. */
  words?(tokens: RecognizerTokens, samples: number): Word[];
  /** The most seconds one decode takes; longer audio is decoded in consecutive windows, texts joined by a space. */
  windowSeconds?: number;
  /** The fewest samples a decode may get (shorter audio crashes some models); shorter input is padded with silence. */
  minSamples?: number;
  params?: readonly ParamRow[];
}

export class SherpaRecognizerFamily<R extends string, M = void> extends CpuFamily {
  readonly tasks = ['asr'] as const;
  override readonly isolations = ['model', 'session'] as const;
  readonly name: string;
  readonly params: readonly ParamRow[];

  constructor(private readonly type: RecognizerType<R | 'tokens', M>) {
    super();
    this.name = type.name;
    this.params = type.params ?? [];
  }

  async recognise(dir: string): Promise<string> {
    const { modelId } = recogniseSpec(dir);
    const files = await findModelFiles(modelId, this.name, dir, this.type.files);
    await this.type.prepare?.(files, {}, modelId);
    return dir;
  }

  async load(spec: LoadSpec) {
    const files = await findModelFiles(
      spec.modelId,
      this.name,
      spec.path,
      this.type.files,
      precisionOption(spec.modelId, spec.loadOptions),
    );
    const prepared = (await this.type.prepare?.(files, spec.loadOptions, spec.modelId)) as M;
    const config = {
      featConfig: { sampleRate: INPUT_RATE, featureDim: 80 },
      modelConfig: {
        ...this.type.modelConfig(files, spec.loadOptions, spec.modelId, prepared),
        tokens: files.tokens,
        numThreads: 1,
        debug: 0,
      },
      ...this.type.recognizerConfig?.(files, spec.loadOptions, spec.modelId),
    };
    const { windowSeconds, minSamples } = this.type;
    const limits: AudioLimits = {
      ...(windowSeconds ? { windowSamples: Math.round(windowSeconds * INPUT_RATE) } : {}),
      ...(minSamples ? { minSamples } : {}),
    };
    const settings: SessionSettings = {
      config,
      requestSettings: (request) =>
        this.type.requestSettings?.(request, spec.loadOptions, spec.modelId, prepared),
      words: this.type.words,
      limits,
    };
    return this.loadedOnRunners(spec, WORKER_URL, config, RecognizerSession, settings);
  }
}
