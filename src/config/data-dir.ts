/**
 * voxd's data folder, where state that outlives a process lives (installed model packages):
 * `$VOXD_DATA_DIR`, else `$XDG_DATA_HOME/voxd`, else `~/.local/share/voxd` (the XDG default).
 */
import { homedir } from 'node:os';
import path from 'node:path';

export function dataDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env['VOXD_DATA_DIR']) return path.resolve(env['VOXD_DATA_DIR']);
  const xdg = env['XDG_DATA_HOME'];
  // XDG says a relative value is invalid and must be ignored.
  const base = xdg && path.isAbsolute(xdg) ? xdg : path.join(homedir(), '.local', 'share');
  return path.join(base, 'voxd');
}

/** The models root when none is configured. */
export function defaultModelsRoot(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(dataDir(env), 'models');
}
