/**
 * Ends the process at once, whatever is still running. `process.exit()` cannot do that: on its way
 * out node joins libuv's thread-pool threads (uv_library_shutdown), so a pool thread stuck in a
 * blocking call (a read of a FIFO nobody writes to, a hung network filesystem) makes it wait
 * forever. libc's `_exit` ends the process without waiting for anything.
 */
import { writeSync } from 'node:fs';
import { libcExit } from './libc.js';

/** Writes `text` to stderr (fd 2) before anything else can be lost; gives up on a stderr that blocks. */
function writeStderr(text: string): void {
  let rest = Buffer.from(text, 'utf8');
  // A non-blocking stderr whose reader is slow answers EAGAIN; a few tries, then the line is lost
  // rather than the exit delayed.
  for (let tries = 0; rest.length > 0 && tries < 100; tries++) {
    try {
      rest = rest.subarray(writeSync(2, rest));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') return;
    }
  }
}

/**
 * Writes `lastWords` (if any) to stderr, then ends the process with `code` at once. Without koffi
 * the process kills itself with SIGKILL instead: it still ends, but its parent sees the signal, not
 * the code.
 */
export function hardExit(code: number, lastWords?: string): never {
  if (lastWords) writeStderr(lastWords);
  if (libcExit) libcExit(code);
  process.kill(process.pid, 'SIGKILL');
  // A process that sends itself SIGKILL (which cannot be blocked) dies before kill() returns.
  throw new Error('unreachable: the process was killed');
}
