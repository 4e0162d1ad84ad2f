/**
 * `piper_tts`: Piper (VITS) voices as sherpa-onnx distributes them. `path` is the model folder:
 * one `*.onnx` file, `tokens.txt`, and `espeak-ng-data/` (or, without it, Debian's espeak-ng-data,
 * which voxd's set-up installs). Sessions run in runner processes: one OfflineTts shared by the
 * model's slots (isolation "model") or one each ("session").
 */
import { ANY_ONNX, findModelFiles, precisionOption, TOKENS } from '../sherpa-model-folder.js';
import type { LoadSpec } from '../types.js';
import { espeakDataDir } from './espeak-data.js';
import { SherpaTtsFamily } from './tts-session.js';

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

export const createPiperFamily = () =>
  new SherpaTtsFamily({
    name: 'piper_tts',
    params: [
      { name: 'voice', type: 'string', description: 'speaker number of a multi-speaker voice', default: '0' },
    ],
    setup: async (spec) => ({ config: await piperConfig(spec) }),
  });
