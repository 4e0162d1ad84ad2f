/** espeak-ng data for sherpa TTS models that phonemise with espeak: the model folder's, else Debian's. */
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { VoxdError } from '../../errors.js';

const SYSTEM_ESPEAK_DATA = '/usr/lib/x86_64-linux-gnu/espeak-ng-data';

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/** `dir/espeak-ng-data` when the folder ships it, otherwise the system's (voxd's set-up installs it). */
export async function espeakDataDir(modelId: string, dir: string): Promise<string> {
  const local = join(dir, 'espeak-ng-data');
  const dataDir = (await exists(local)) ? local : SYSTEM_ESPEAK_DATA;
  if (!(await exists(join(dataDir, 'phontab')))) {
    throw new VoxdError(
      'E_INVALID_REQUEST',
      `model '${modelId}': missing espeak-ng data: neither ${local} nor ${SYSTEM_ESPEAK_DATA} (Debian package espeak-ng-data) exists`,
    );
  }
  return dataDir;
}
