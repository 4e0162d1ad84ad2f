/**
 * `silero_vad`: voice activity detection with the silero model, run by sherpa-onnx-node. `path`
 * may name another silero ONNX file; by default voxd uses the copy in assets/silero. Each session
 * is a runner process with its own sherpa Vad (its calls are synchronous, and its model holds the
 * stream's state); sessions share the file.
 */
import { access, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { VoxdError } from '../../errors.js';
import { CpuFamily } from '../cpu-family.js';
import { numberOption } from '../engine-options.js';
import { inputSamples, WorkerEngineSession } from '../engine-worker.js';
import type { EngineRequest, EngineResult, LoadSpec, ParamRow, RunContext } from '../types.js';
import type { VadJob, VadReply, VadSettings } from './vad-worker.js';

const WORKER_URL = new URL('./vad-worker.js', import.meta.url);
export const DEFAULT_SILERO_MODEL = fileURLToPath(
  new URL('../../../../assets/silero/silero_vad.onnx', import.meta.url),
);

class SileroSession extends WorkerEngineSession<Omit<VadJob, 'id'>, VadReply> {
  async run(request: EngineRequest, { signal }: RunContext): Promise<EngineResult> {
    const samples = inputSamples(request, 'voice activity detection');
    const o = request.options;
    const job: Omit<VadJob, 'id'> = { samples };
    const threshold = numberOption(o, 'threshold', { where: 'options.', min: 0.01, max: 0.99 });
    if (threshold !== undefined) job.threshold = threshold;
    const minSilenceMs = numberOption(o, 'min_silence_ms', { where: 'options.', min: 0, max: 60_000 });
    if (minSilenceMs !== undefined) job.minSilenceDuration = minSilenceMs / 1000;
    const reply = await this.job(job, signal);
    return {
      segments: reply.segments.map(({ start, end }) => ({
        start_sample: start,
        end_sample: end,
        confidence: 1,
      })),
    };
  }
}

/** The silero model file of a model: its `path`, or the copy that ships with voxd. */
export async function sileroModel(spec: LoadSpec): Promise<string> {
  const model = spec.path || DEFAULT_SILERO_MODEL;
  try {
    await access(model);
  } catch {
    throw new VoxdError(
      'E_INVALID_REQUEST',
      `model '${spec.modelId}': silero model file not found: ${model}`,
    );
  }
  return model;
}

export class SileroVadFamily extends CpuFamily {
  readonly name = 'silero_vad';
  readonly tasks = ['vad'] as const;
  readonly params: readonly ParamRow[] = [
    {
      name: 'threshold',
      type: 'float',
      description: 'Speech probability threshold (0.01-0.99); overrides load_options.threshold',
      default: '0.5',
    },
    {
      name: 'min_silence_ms',
      type: 'int',
      description: 'Shortest silence that ends a speech segment, ms; overrides load_options.min_silence_ms',
      default: '200',
    },
  ];

  async estimateFootprint(): Promise<number> {
    return 30 * 1024 * 1024;
  }

  /** A folder holding one silero ONNX file (`*silero*.onnx`); its `path` is that file. */
  async recognise(dir: string): Promise<string> {
    const names = await readdir(dir).catch(() => []);
    const models = names.filter((name) => /silero.*\.onnx$/i.test(name));
    if (models.length !== 1)
      throw new VoxdError(
        'E_INVALID_REQUEST',
        `silero_vad model folder ${dir} needs exactly one *silero*.onnx file, has ${models.length}`,
      );
    return join(dir, models[0]!);
  }

  async load(spec: LoadSpec) {
    const model = await sileroModel(spec);
    const o = spec.loadOptions;
    const settings: VadSettings = {
      model,
      threshold: numberOption(o, 'threshold', { where: 'load_options.', min: 0.01, max: 0.99 }) ?? 0.5,
      minSilenceDuration:
        (numberOption(o, 'min_silence_ms', { where: 'load_options.', min: 0, max: 60_000 }) ?? 200) / 1000,
      minSpeechDuration:
        (numberOption(o, 'min_speech_ms', { where: 'load_options.', min: 0, max: 60_000 }) ?? 250) / 1000,
      maxSpeechDuration:
        (numberOption(o, 'max_speech_ms', { where: 'load_options.', min: 1000, max: 600_000 }) ?? 20_000) /
        1000,
    };
    return this.loadedOnRunners(spec, WORKER_URL, settings, SileroSession, undefined);
  }
}
