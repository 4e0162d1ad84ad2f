import { findOnnxAndTokens } from '../sherpa-model-folder.js';
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

class RecognizerSession extends ThreadEngineSession<Omit<RecognizerJob, 'id'>, RecognizerReply> {
  constructor(id: string, config: unknown) {
    super(id, WORKER_URL, config);
  }

  async run(request: EngineRequest, { signal }: RunContext): Promise<EngineResult> {
    const samples = inputSamples(request, 'speech recognition');
    const reply = await this.thread.call({ samples }, signal, [samples.buffer]);
    if (!reply.ok) throw new Error(reply.message);
    return { text: reply.text, ...(reply.lang ? { language: reply.lang } : {}) };
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
