/**
 * `pyannote_diar`: speaker diarization with a pyannote segmentation model plus a speaker-embedding
 * model (3D-Speaker, WeSpeaker), run by sherpa-onnx. `path` is a folder holding both, named
 * `segmentation.onnx` and `embedding.onnx` unless the load options `segmentation` and `embedding`
 * name other files in it. Each session is a runner process with its own diarizer.
 */
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { VoxdError } from '../../errors.js';
import { CpuFamily, INPUT_RATE } from '../cpu-family.js';
import { numberOption } from '../engine-options.js';
import { inputSamples, WorkerEngineSession } from '../engine-worker.js';
import type { EngineRequest, EngineResult, LoadSpec, ParamRow, RunContext } from '../types.js';
import type { PyannoteJob, PyannoteReply, PyannoteSettings } from './pyannote-worker.js';

const WORKER_URL = new URL('./pyannote-worker.js', import.meta.url);

/** The speaker count of a request that gives none (-1: the clustering threshold finds it). */
type Speakers = { defaultSpeakers: number };

class PyannoteSession extends WorkerEngineSession<Omit<PyannoteJob, 'id'>, PyannoteReply, Speakers> {
  async run(request: EngineRequest, { signal }: RunContext): Promise<EngineResult> {
    const samples = inputSamples(request, 'diarization');
    const numSpeakers =
      numberOption(request.options, 'num_speakers', { where: 'options.', min: -1, max: 64, integer: true }) ??
      this.settings.defaultSpeakers;
    const reply = await this.job({ samples, numSpeakers }, signal);
    return {
      text: '',
      speakerTurns: reply.turns.map(({ start, end, speaker }) => ({
        start_sample: Math.round(start * INPUT_RATE),
        end_sample: Math.round(end * INPUT_RATE),
        speaker_id: speaker,
        confidence: 1,
      })),
    };
  }
}

export class PyannoteFamily extends CpuFamily {
  readonly name = 'pyannote_diar';
  readonly tasks = ['diar'] as const;
  readonly params: readonly ParamRow[] = [
    {
      name: 'num_speakers',
      type: 'int',
      description: 'known speaker count; -1 finds it by the clustering threshold',
      default: '-1',
    },
  ];

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

  async load(spec: LoadSpec) {
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
    return this.loadedOnRunners(spec, WORKER_URL, settings, PyannoteSession, { defaultSpeakers });
  }
}
