/**
 * A process that logs through createLogger's stderr destination (a pipe: the parent's), counting
 * the writes that reach fd 2, then ends as `voxd serve` does: hardExit, which runs no exit handlers.
 * argv: the number of lines, then how it ends: `flush` (await flush(), as a fatal exit does), `drained`
 * (await drained(), as the clean exit does first) or `none` (neither: the lines may be lost).
 * It tells the parent on stdout, synchronously, how many writes reached stderr.
 */
import fs from 'node:fs';
import { createLogger } from '../../src/observability/logger.js';
import { hardExit } from '../../src/util/hard-exit.js';

const [count = '1000', ending = 'flush'] = process.argv.slice(2);
let writes = 0;
// sonic-boom looks fs.write and fs.writeSync up at each call, so counting them here sees its writes.
const write = fs.write;
const writeSync = fs.writeSync;
const counted = <F extends (fd: number, ...rest: never[]) => unknown>(f: F) =>
  ((fd: number, ...rest: never[]) => {
    if (fd === 2) writes++;
    return f(fd, ...rest);
  }) as F;
fs.write = counted(write);
fs.writeSync = counted(writeSync);

const output = createLogger({ level: 'info' });
const log = output.logger.child({ model: 'm' });
// Lines over a few turns of the event loop, as a busy server logs them.
for (let turn = 0; turn < 4; turn++) {
  await new Promise((resolve) => setImmediate(resolve));
  for (let i = 0; i < Number(count) / 4; i++) log.info({ n: turn * (Number(count) / 4) + i }, 'line');
}
output.logger.info('last line');
if (ending === 'drained') await output.drained();
if (ending === 'flush') await output.flush();
writeSync(1, `${JSON.stringify({ writes })}\n`);
hardExit(0);
