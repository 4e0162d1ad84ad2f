// V8's collections per upload shape (issue 42): the diarizer's 5 s requests at 2 in flight, as base64
// JSON (POST /v1/tasks/run) and as a multipart upload (POST /v1/audio/transcriptions), through
// `voxd serve` children (classic-diar at 2 slots; scripts/bench-load.mjs --socket as the client),
// one child run as voxd runs today and one with `--initial-old-space-size=128` on its node command
// line (V8's old generation starting with a 128 MB limit). Both children stay up, and their rounds
// alternate, so the machine's drift moves both alike. Per round: requests/s, the CPU per request of
// the server's main thread and of its other threads (/proc, 10 ms ticks), its minor page faults per
// request, and the collections V8 ran (scripts/gc-counter.mjs preloaded: full ones and scavenges,
// and the main thread's time in full ones per request); the children's resident memory at the end.
// Usage: npm run build && node scripts/bench-gc-route.mjs [--rounds=2] [--seconds=6]
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { socketLoad, spokenClip, startServeChild, threadCpu } from './bench-server.mjs';

const arg = (name, fallback) =>
  Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const ROUNDS = arg('rounds', 2);
const SECONDS = arg('seconds', 6);
const IN_FLIGHT = 2;
const COUNTER = fileURLToPath(new URL('./gc-counter.mjs', import.meta.url));

const { wav } = await spokenClip(5);
const form = new FormData();
form.set('model', 'classic-diar');
form.set('file', new Blob([wav], { type: 'audio/wav' }), 'clip.wav');
const encoded = new Response(form);
const SHAPES = [
  {
    upload: 'base64 JSON',
    route: '/v1/tasks/run',
    contentType: 'application/json',
    body: Buffer.from(JSON.stringify({ model: 'classic-diar', audio_base64: wav.toString('base64') })),
  },
  {
    upload: 'multipart',
    route: '/v1/audio/transcriptions',
    contentType: encoded.headers.get('content-type'),
    body: Buffer.from(await encoded.arrayBuffer()),
  },
];
const VARIANTS = [
  { name: 'as today', nodeArgs: [] },
  { name: '--initial-old-space-size=128', nodeArgs: ['--initial-old-space-size=128'] },
];

/** The process's minor page faults so far (/proc/<pid>/stat field 10). */
function minorFaults(pid) {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(text.slice(text.lastIndexOf(')') + 2).split(' ')[7]);
}
const residentMb = (pid) =>
  Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;

/** The collections counted since the last SIGUSR1: the child writes them on SIGUSR2. */
async function collections(server, out) {
  rmSync(out, { force: true });
  server.child.kill('SIGUSR2');
  for (let i = 0; i < 200 && !existsSync(out); i++) await delay(10);
  await delay(10); // the write completes
  return JSON.parse(readFileSync(out, 'utf8'));
}

const servers = [];
for (const variant of VARIANTS) {
  process.env.VOXD_GC_COUNTS_OUT = join('/tmp', `voxd-gc-${process.pid}-${servers.length}.json`);
  const server = await startServeChild(
    { models: [{ id: 'classic-diar', family: 'classic_diar', task: 'diar', slots: IN_FLIGHT }] },
    ['--import', COUNTER, ...variant.nodeArgs],
  );
  const out = process.env.VOXD_GC_COUNTS_OUT;
  process.once('exit', () => rmSync(out, { force: true }));
  const files = SHAPES.map((shape, i) => {
    const file = join(server.dir, `body-${i}`);
    writeFileSync(file, shape.body);
    return file;
  });
  // Warm-up: the runners started and the request path optimized, each shape.
  for (const [i, shape] of SHAPES.entries())
    await socketLoad(`${server.base}${shape.route}`, files[i], IN_FLIGHT, 4, shape.contentType);
  servers.push({ variant, server, out, files });
}

console.log(
  `Diarizer (classic-diar, 2 slots), 5 s WAV, ${IN_FLIGHT} in flight, ${SECONDS} s rounds alternating between the two servers.\n`,
);
console.log(
  '| server | upload | round | requests/s | main thread (ms/request) | other threads (ms/request) | minor page faults/request | full collections | scavenges | main thread in full collections (ms/request) |',
);
console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|');
for (let round = 1; round <= ROUNDS; round++) {
  for (const [i, shape] of SHAPES.entries()) {
    for (const { variant, server, out, files } of servers) {
      const pid = server.child.pid;
      server.child.kill('SIGUSR1');
      const before = threadCpu(pid);
      const faults = minorFaults(pid);
      const { done } = await socketLoad(
        `${server.base}${shape.route}`,
        files[i],
        IN_FLIGHT,
        SECONDS,
        shape.contentType,
      );
      const after = threadCpu(pid);
      const gc = await collections(server, out);
      const main = (after[pid] - before[pid]) / done;
      const others =
        Object.keys(after)
          .filter((tid) => tid !== String(pid))
          .reduce((sum, tid) => sum + (after[tid] - (before[tid] ?? 0)), 0) / done;
      const full = gc.major ?? { n: 0, ms: 0 };
      const incremental = gc.incremental ?? { n: 0, ms: 0 };
      console.log(
        `| ${variant.name} | ${shape.upload} | ${round} | ${(done / SECONDS).toFixed(1)} | ${main.toFixed(2)} | ${others.toFixed(2)} | ${((minorFaults(pid) - faults) / done).toFixed(1)} | ${full.n} | ${gc.minor?.n ?? 0} | ${((full.ms + incremental.ms) / done).toFixed(2)} |`,
      );
    }
  }
}
console.log(
  `\nResident memory at the end: ${servers.map((s) => `${s.variant.name} ${residentMb(s.server.child.pid).toFixed(0)} MiB`).join(', ')}.`,
);
for (const { server } of servers) await server.stop();
