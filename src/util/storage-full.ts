/**
 * A write that failed because the disk (or the user's quota) is full is the server's condition, a
 * 507, never the client's fault: without this a full temporary folder made an upload a 400
 * "malformed multipart request: ENOSPC...".
 */
import { VoxdError } from '../errors.js';

const FULL = new Set(['ENOSPC', 'EDQUOT']);

/** The 507 for `err` when it says the disk is full (`what` says what failed); undefined otherwise. */
export function storageFull(err: unknown, what: string): VoxdError | undefined {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code !== 'string' || !FULL.has(code)) return undefined;
  return new VoxdError(
    'E_INSUFFICIENT_STORAGE',
    `${what}: the server's temporary folder is full (${code}); retry later, or send a smaller file`,
    { cause: err },
  );
}
