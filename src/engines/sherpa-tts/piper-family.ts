/**
 * `piper_tts`: Piper (VITS) voices as sherpa-onnx distributes them. `path` is the model folder:
 * one `*.onnx` file, `tokens.txt`, and `espeak-ng-data/` (or, without it, Debian's espeak-ng-data,
 * which voxd's set-up installs). Each session is a worker thread with its own OfflineTts.
 */
import { ANY_ONNX, findModelFiles, precisionOption, TOKENS } from '../sherpa-model-folder.js';
import type { EngineFamily, LoadedModel, LoadSpec, ParamRow } from '../types.js';
import { espeakDataDir } from './espeak-data.js';
import { SherpaTtsSession } from './tts-session.js';

const CAPACITY = 4;

/** The OfflineTts config of a Piper voice folder, with espeak-ng data from the folder or the system. */
export async function piperConfig(spec: LoadSpec): Promise<unknown> {
  const { model, tokens } = await findModelFiles(
    spec.modelId,
    'piper_tts',
    spec.path,
    { model: ANY_ONNX, tokens: TOKENS },
    precisionOption(spec.modelId, spec.loadOptions),
  );
  const dataDir = await espeakDataDir(spec.modelId, spec.path);
  return { model: { vits: { model, tokens, dataDir }, numThreads: 1, debug: false }, maxNumSentences: 1 };
}

export class PiperFamily implements EngineFamily {
  readonly name = 'piper_tts';
  readonly tasks = ['tts'] as const;
  readonly backends = ['cpu'] as const;
  readonly maxCapacity = CAPACITY;
  readonly params: readonly ParamRow[] = [
    { name: 'speed', type: 'float', description: 'speaking rate, 0.25..4', default: '1' },
    { name: 'voice', type: 'string', description: 'speaker number of a multi-speaker voice', default: '0' },
  ];
  #sessions = 0;

  async load(spec: LoadSpec): Promise<LoadedModel> {
    const config = await piperConfig(spec);
    return {
      capacity: CAPACITY,
      audioInput: { sampleRate: 16000, channels: 1 },
      createSession: async () => new SherpaTtsSession(`${spec.modelId}#${++this.#sessions}`, config),
      dispose: async () => {},
    };
  }
}
