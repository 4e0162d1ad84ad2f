// What status streams cost the server: a real `voxd serve` child with 2,000 (lazy) fixture models
// and 100 clients on GET /v1/ui/status/stream, the server's CPU measured over 30 s from /proc.
//   node scripts/status-streams-cpu.mjs [streams] [models] [seconds]     (after npm run build)
// VOXD_ENTRY=<path to dist/src/cli/main.js> measures another build (the default is this one's).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const [streams = 100, models = 2000, seconds = 30] = process.argv.slice(2).map(Number);
const entry = process.env.VOXD_ENTRY ?? 'dist/src/cli/main.js';
const dir = mkdtempSync(join(tmpdir(), 'voxd-status-cpu-'));
const config = join(dir, 'server.json');
writeFileSync(
  config,
  JSON.stringify({
    ui: true,
    models: Array.from({ length: models }, (_, i) => ({
      id: `model-${i}`,
      family: 'fixture',
      path: '.',
      task: 'asr',
      lazy: true,
    })),
  }),
);

/** User plus system CPU time of a process, in seconds. */
function cpu(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

const child = spawn(
  process.execPath,
  [entry, 'serve', '--config', config, '--port', '0', '--enable-fixture'],
  {
    stdio: ['ignore', 'ignore', 'pipe'],
  },
);
const url = await new Promise((resolve, reject) => {
  let err = '';
  child.stderr.on('data', (d) => {
    err += d;
    const m = /listening on (\S+)/.exec(err);
    if (m) resolve(m[1]);
  });
  child.on('exit', () => reject(new Error(`voxd exited: ${err}`)));
});

const requests = [];
let bytes = 0;
try {
  const idle = cpu(child.pid);
  await sleep(5000);
  const idleShare = (cpu(child.pid) - idle) / 5;
  for (let i = 0; i < streams; i++)
    requests.push(
      get(`${url}/v1/ui/status/stream`, (res) =>
        res.on('data', (d) => {
          bytes += d.length;
        }),
      ),
    );
  await sleep(5000);
  const before = cpu(child.pid);
  const startBytes = bytes;
  await sleep(seconds * 1000);
  const share = (cpu(child.pid) - before) / seconds;
  console.log(
    `${streams} status streams over ${models} models: server CPU ${(share * 100).toFixed(1)} % of a core ` +
      `(idle before them ${(idleShare * 100).toFixed(1)} %), ${((bytes - startBytes) / 1048576).toFixed(1)} MB sent in ${seconds} s`,
  );
} finally {
  for (const r of requests) r.destroy();
  child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}
