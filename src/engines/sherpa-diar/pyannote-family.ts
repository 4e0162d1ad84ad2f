/**
 * `pyannote_diar`: speaker diarization with a pyannote segmentation model plus a speaker-embedding
 * model (3D-Speaker, WeSpeaker), run by sherpa-onnx. `path` is a folder holding both, named
 * `segmentation.onnx` and `embedding.onnx` unless the load options `segmentation` and `embedding`
 * name other files in it. Each session is a runner process with its own diarizer.
 */
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { VoxdError } from '../../errors.js';
import { numberOption } from '../engine-options.js';
import { EngineWorker, inputSamples, WorkerEngineSession } from '../engine-worker.js';
import { jobFailed } from '../job-error.js';
import type {
  EngineFamily,
  EngineRequest,
  EngineResult,
  LoadedModel,
  LoadSpec,
  ParamRow,
  RunContext,
} from '../types.js';
import type { PyannoteJob, PyannoteReply, PyannoteSettings } from './pyannote-worker.js';

const WORKER_URL = new URL('./pyannote-worker.js', import.meta.url);
const CAPACITY = 4;
const RATE = 16000;

class PyannoteSession extends WorkerEngineSession<Omit<PyannoteJob, 'id'>, PyannoteReply> {
  constructor(
    id: string,
    settings: PyannoteSettings,
    private readonly defaultSpeakers: number,
  ) {
    super(id, new EngineWorker(WORKER_URL, settings, 'process'));
  }

  async run(request: EngineRequest, { signal }: RunContext): Promise<EngineResult> {
    const samples = inputSamples(request, 'diarization');
    const numSpeakers =
      numberOption(request.options, 'num_speakers', { where: 'options.', min: -1, max: 64, integer: true }) ??
      this.defaultSpeakers;
    const reply = await this.worker.call({ samples, numSpeakers }, signal, [samples.buffer]);
    if (!reply.ok) throw jobFailed(reply);
    return {
      text: '',
      speakerTurns: reply.turns.map(({ start, end, speaker }) => ({
        start_sample: Math.round(start * RATE),
        end_sample: Math.round(end * RATE),
        speaker_id: speaker,
        confidence: 1,
      })),
    };
  }
}

export class PyannoteFamily implements EngineFamily {
  readonly name = 'pyannote_diar';
  readonly tasks = ['diar'] as const;
  readonly backends = ['cpu'] as const;
  readonly maxCapacity = CAPACITY;
  readonly params: readonly ParamRow[] = [
    {
      name: 'num_speakers',
      type: 'int',
      description: 'known speaker count; -1 finds it by the clustering threshold',
      default: '-1',
    },
  ];
  #sessions = 0;

  /** A folder with segmentation.onnx and embedding.onnx (the names load uses by default). */
  async recognise(dir: string): Promise<string> {
    for (const name of ['segmentation.onnx', 'embedding.onnx']) {
      try {
        await access(join(dir, name));
      } catch {
        throw new VoxdError('E_INVALID_REQUEST', `pyannote_diar model folder ${dir} is missing ${name}`);
      }
    }
    return dir;
  }

  async load(spec: LoadSpec): Promise<LoadedModel> {
    const o = spec.loadOptions;
    const fail = (what: string) => new VoxdError('E_INVALID_REQUEST', `model '${spec.modelId}': ${what}`);
    if (!spec.path)
      throw fail('pyannote_diar needs "path": the folder with segmentation.onnx and embedding.onnx');
    const settings: PyannoteSettings = {
      segmentation: join(spec.path, o['segmentation'] ?? 'segmentation.onnx'),
      embedding: join(spec.path, o['embedding'] ?? 'embedding.onnx'),
      threshold: numberOption(o, 'threshold', { where: 'load_options.', min: 0.01, max: 2 }) ?? 0.5,
      minDurationOn:
        (numberOption(o, 'min_duration_on_ms', { where: 'load_options.', min: 0, max: 10_000 }) ?? 300) /
        1000,
      minDurationOff:
        (numberOption(o, 'min_duration_off_ms', { where: 'load_options.', min: 0, max: 10_000 }) ?? 500) /
        1000,
    };
    for (const file of [settings.segmentation, settings.embedding]) {
      try {
        await access(file);
      } catch {
        throw fail(`missing file: ${file}`);
      }
    }
    const defaultSpeakers =
      numberOption(o, 'num_speakers', { where: 'load_options.', min: -1, max: 64, integer: true }) ?? -1;
    return {
      capacity: CAPACITY,
      audioInput: { sampleRate: RATE, channels: 1 },
      createSession: async () =>
        new PyannoteSession(`${spec.modelId}#${++this.#sessions}`, settings, defaultSpeakers),
      dispose: async () => {},
    };
  }
}
