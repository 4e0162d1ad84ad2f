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

/** Builds a request's stream options; throws a 400 for an option it cannot honour. */
type StreamOptionsOf = (request: EngineRequest) => Record<string, string> | undefined;

class RecognizerSession extends ThreadEngineSession<Omit<RecognizerJob, 'id'>, RecognizerReply> {
  constructor(
    id: string,
    config: unknown,
    private readonly streamOptionsOf: StreamOptionsOf,
  ) {
    super(id, WORKER_URL, config);
  }

  async run(request: EngineRequest, { signal }: RunContext): Promise<EngineResult> {
    // Options first, so a bad one is a 400 before any audio is touched.
    const streamOptions = this.streamOptionsOf(request);
    const samples = inputSamples(request, 'speech recognition');
    const reply = await this.thread.call({ samples, streamOptions }, signal, [samples.buffer]);
    if (!reply.ok) throw new Error(reply.message);
    const language = languageCode(reply.lang);
    return { text: reply.text, ...(language ? { language } : {}) };
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

export interface RecognizerType<R extends string> {
  /** The config `family` name, e.g. `whisper_asr`. */
  name: string;
  /** The files of a model folder, by role. */
  files: Record<R, FileRole>;
  /** The `modelConfig` entries of this model type (tokens is added), e.g. `{ whisper: {...} }`. */
  modelConfig(files: FolderFiles<R>, loadOptions: OptionMap, modelId: string): Record<string, unknown>;
  /**
   * The per-request settings sherpa reads from the stream (OfflineStream.setOption), checked in the
   * caller's thread; throws a 400 naming a bad value. Absent: requests carry no settings.
   */
  streamOptions?(request: EngineRequest, loadOptions: OptionMap, modelId: string): Record<string, string>;
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
        ...this.type.modelConfig(files, spec.loadOptions, spec.modelId),
        tokens: files.tokens,
        numThreads: 1,
        debug: 0,
      },
    };
    return {
      capacity: CAPACITY,
      audioInput: { sampleRate: 16000, channels: 1 },
      createSession: async () =>
        new RecognizerSession(`${spec.modelId}#${++this.#sessions}`, config, (request) =>
          this.type.streamOptions?.(request, spec.loadOptions, spec.modelId),
        ),
      dispose: async () => {},
    };
  }
}
