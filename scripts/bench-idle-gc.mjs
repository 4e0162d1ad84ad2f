// What a pause in the traffic costs the requests after it (issue 42): one `voxd serve` child
// (silero-vad, one slot, V8's --trace-gc on its stdout) is sent 5 s VAD requests (base64 JSON, one
// in flight, scripts/bench-load.mjs --socket in its own process) in 4 s rounds, each after a pause
// of GAP ms with no request. A pause lets the server's memory release run (src/util/release-memory.ts:
// a collection 200 ms after a burst that owes enough large buffers, the idle release after 5 s);
// what a forced full collection leaves behind shows in the rounds after it. Per round: requests/s,
// the CPU per request of the server's main thread and of its other threads (V8's GC and compiler
// helpers among them; /proc/<pid>/task/*/stat, 10 ms ticks), and the full collections V8 ran during
// the round (Mark-Compact lines; "forced" when voxd's release asked for it, during the pause).
// A fresh server for each pause length.
// Usage: npm run build && node scripts/bench-idle-gc.mjs [--gaps=50,4000,6000] [--rounds=4]
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { socketLoad, spokenClip, startServeChild, threadCpu } from './bench-server.mjs';

const arg = (name, fallback) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback;
const GAPS = arg('gaps', '50,4000,6000').split(',').map(Number);
const ROUNDS = Number(arg('rounds', 4));
const SECONDS = 4;

const { wav } = await spokenClip(5);
const body = Buffer.from(JSON.stringify({ model: 'silero-vad', audio_base64: wav.toString('base64') }));

const fullCollections = (text) => (text.match(/Mark-Compact/g) ?? []).length;
const forcedCollections = (text) => (text.match(/Mark-Compact[^\n]*testing/g) ?? []).length;

console.log(
  `5 s VAD requests (base64 JSON, one in flight) in ${SECONDS} s rounds, each after a pause; one voxd child per pause length.\n`,
);
console.log(
  '| pause before each round (ms) | round | requests/s | main thread (ms/request) | other threads (ms/request) | full collections in the round | forced ones in the pause before |',
);
console.log('|---:|---:|---:|---:|---:|---:|---:|');
for (const gap of GAPS) {
  const server = await startServeChild(
    { models: [{ id: 'silero-vad', family: 'silero_vad', task: 'vad', slots: 1 }] },
    ['--trace-gc'],
  );
  const pid = server.child.pid;
  const bodyFile = join(server.dir, 'body.json');
  writeFileSync(bodyFile, body);
  // Asynchronous, so the server's trace lines are read while the round runs.
  const load = async () =>
    (await socketLoad(`${server.base}/v1/tasks/run`, bodyFile, 1, SECONDS, 'application/json')).done;
  await load(); // warm-up: the code optimized, the runner started
  for (let round = 1; round <= ROUNDS; round++) {
    const beforePause = server.stdout().length;
    await new Promise((resolve) => setTimeout(resolve, gap));
    const start = server.stdout().length;
    const before = threadCpu(pid);
    const done = await load();
    const after = threadCpu(pid);
    await new Promise((resolve) => setTimeout(resolve, 20)); // the round's last trace lines
    const trace = server.stdout().slice(start);
    const main = (after[pid] - before[pid]) / done;
    const others = Object.keys(after)
      .filter((tid) => tid !== String(pid))
      .reduce((sum, tid) => sum + (after[tid] - (before[tid] ?? 0)), 0);
    console.log(
      `| ${gap} | ${round} | ${(done / SECONDS).toFixed(1)} | ${main.toFixed(2)} | ${(others / done).toFixed(2)} | ${fullCollections(trace)} | ${forcedCollections(server.stdout().slice(beforePause, start))} |`,
    );
  }
  await server.stop();
}
