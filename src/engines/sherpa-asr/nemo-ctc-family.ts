/**
 * `nemo_ctc_asr`: NeMo CTC recognisers as sherpa-onnx distributes them. `path` is the model folder:
 * one `*.onnx` file and `tokens.txt`. Each session is a worker thread with its own recognizer.
 */
import { invalidRequest } from '../../errors.js';
import { findOnnxAndTokens } from '../sherpa-model-folder.js';
import { ThreadSession } from '../thread-session.js';
import type {
  EngineFamily,
  EngineRequest,
  EngineResult,
  EngineSession,
  LoadedModel,
  LoadSpec,
  ParamRow,
  RunContext,
} from '../types.js';
import type { RecognizerJob, RecognizerReply } from './recognizer-worker.js';

const WORKER_URL = new URL('./recognizer-worker.js', import.meta.url);
const CAPACITY = 4;

class RecognizerSession implements EngineSession {
  readonly #thread: ThreadSession<Omit<RecognizerJob, 'id'>, RecognizerReply>;

  constructor(
    readonly id: string,
    config: unknown,
  ) {
    this.#thread = new ThreadSession(WORKER_URL, config);
  }

  async run(request: EngineRequest, { signal }: RunContext): Promise<EngineResult> {
    if (!request.audio) throw invalidRequest("'audio' is required: speech recognition needs input audio");
    const samples = request.audio.samples.slice();
    const reply = await this.#thread.call({ samples }, signal, [samples.buffer]);
    if (!reply.ok) throw new Error(reply.message);
    return { text: reply.text, ...(reply.lang ? { language: reply.lang } : {}) };
  }

  dispose(): Promise<void> {
    return this.#thread.dispose();
  }
}

export class NemoCtcFamily implements EngineFamily {
  readonly name = 'nemo_ctc_asr';
  readonly tasks = ['asr'] as const;
  readonly backends = ['cpu'] as const;
  readonly maxCapacity = CAPACITY;
  readonly params: readonly ParamRow[] = [];
  #sessions = 0;

  async load(spec: LoadSpec): Promise<LoadedModel> {
    const { model, tokens } = await findOnnxAndTokens(spec.modelId, this.name, spec.path);
    const config = {
      featConfig: { sampleRate: 16000, featureDim: 80 },
      modelConfig: { nemoCtc: { model }, tokens, numThreads: 1, debug: 0 },
    };
    return {
      capacity: CAPACITY,
      audioInput: { sampleRate: 16000, channels: 1 },
      createSession: async () => new RecognizerSession(`${spec.modelId}#${++this.#sessions}`, config),
      dispose: async () => {},
    };
  }
}
