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

/** modelConfig entries to change for one request, merged one level deep (`{ canary: { srcLang } }`). */
export type ConfigPatch = Record<string, Record<string, unknown>>;

interface RecognizerConfig {
  modelConfig: Record<string, unknown>;
}

class RecognizerSession extends ThreadEngineSession<Omit<RecognizerJob, 'id'>, RecognizerReply> {
  constructor(
    id: string,
    private readonly config: RecognizerConfig,
    private readonly requestConfig?: (request: EngineRequest) => ConfigPatch | undefined,
  ) {
    super(id, WORKER_URL, config);
  }

  async run(request: EngineRequest, { signal }: RunContext): Promise<EngineResult> {
    // Validated before the audio is copied, so a bad option is a 400 without engine work.
    const patch = this.requestConfig?.(request);
    const samples = inputSamples(request, 'speech recognition');
    const job = { samples, ...(patch ? { config: patched(this.config, patch) } : {}) };
    const reply = await this.thread.call(job, signal, [samples.buffer]);
    if (!reply.ok) throw new Error(reply.message);
    return { text: reply.text, ...(reply.lang ? { language: reply.lang } : {}) };
  }
}

function patched(config: RecognizerConfig, patch: ConfigPatch): RecognizerConfig {
  const modelConfig = { ...config.modelConfig };
  for (const [key, entries] of Object.entries(patch))
    modelConfig[key] = { ...(modelConfig[key] as Record<string, unknown>), ...entries };
  return { ...config, modelConfig };
}

export interface RecognizerType<R extends string> {
  /** The config `family` name, e.g. `whisper_asr`. */
  name: string;
  /** The files of a model folder, by role. */
  files: Record<R, FileRole>;
  /**
   * The `modelConfig` entries of this model type (tokens is added), e.g. `{ whisper: {...} }`;
   * async when the folder must be checked first.
   */
  modelConfig(
    files: FolderFiles<R>,
    loadOptions: OptionMap,
    modelId: string,
  ): Record<string, unknown> | Promise<Record<string, unknown>>;
  /**
   * Settings a request may change (the worker applies them with sherpa's setConfig before decoding
   * and restores the loaded ones for a request without a patch); throws a 400 for a bad value.
   */
  requestConfig?(request: EngineRequest, loadOptions: OptionMap): ConfigPatch | undefined;
  params?: readonly ParamRow[];
}

export class SherpaRecognizerFamily<R extends string> implements EngineFamily {
  readonly tasks = ['asr'] as const;
  readonly backends = ['cpu'] as const;
  readonly maxCapacity = CAPACITY;
  readonly name: string;
  readonly params: readonly ParamRow[];
  #sessions = 0;

  constructor(private readonly type: RecognizerType<R | 'tokens'>) {
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
    const config = {
      featConfig: { sampleRate: 16000, featureDim: 80 },
      modelConfig: {
        ...(await this.type.modelConfig(files, spec.loadOptions, spec.modelId)),
        tokens: files.tokens,
        numThreads: 1,
        debug: 0,
      },
    };
    return {
      capacity: CAPACITY,
      audioInput: { sampleRate: 16000, channels: 1 },
      createSession: async () =>
        new RecognizerSession(
          `${spec.modelId}#${++this.#sessions}`,
          config,
          this.type.requestConfig && ((request) => this.type.requestConfig!(request, spec.loadOptions)),
        ),
      dispose: async () => {},
    };
  }
}
