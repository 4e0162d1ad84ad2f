// Benchmark of the embedded engines under --parallel-jobs: throughput with 1, 2 and 4 slots,
// resident memory per slot, and event-loop lag while the server is loaded. Not a test: it prints
// a Markdown table for docs/performance.md.
// Usage: npm run build && node --expose-gc scripts/bench-engines.mjs [seconds-per-round] [--rounds=N] [engine ids...]
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { SENTENCE, startBenchServer } from './bench-server.mjs';

const args = process.argv.slice(2);
const SECONDS = Number(args.find((a) => /^\d+$/.test(a)) ?? 4);
const ROUNDS = Number(args.find((a) => a.startsWith('--rounds='))?.slice(9) ?? 3);
const ONLY = new Set(args.filter((a) => !/^\d+$/.test(a) && !a.startsWith('--')));
const LOAD = fileURLToPath(new URL('./bench-load.mjs', import.meta.url));

const ENGINES = [
  {
    id: 'flite',
    family: 'flite_tts',
    task: 'tts',
    route: '/v1/audio/speech',
    body: () => ({ model: 'flite', input: SENTENCE }),
  },
  {
    id: 'espeak',
    family: 'espeak_tts',
    task: 'tts',
    route: '/v1/audio/speech',
    body: () => ({ model: 'espeak', input: SENTENCE }),
  },
  {
    id: 'pocketsphinx',
    family: 'pocketsphinx_asr',
    task: 'asr',
    route: '/v1/tasks/run',
    body: (wav) => ({ model: 'pocketsphinx', audio_base64: wav }),
  },
  {
    id: 'silero-vad',
    family: 'silero_vad',
    task: 'vad',
    route: '/v1/tasks/run',
    body: (wav) => ({ model: 'silero-vad', audio_base64: wav }),
  },
  {
    id: 'diarizer',
    family: 'classic_diar',
    task: 'diar',
    route: '/v1/tasks/run',
    body: (wav) => ({ model: 'diarizer', audio_base64: wav }),
  },
];

/**
 * Resident memory of this process and every process below it (runner processes of sessions), in
 * bytes, from /proc: a session in a runner process would be missed by process.memoryUsage().
 */
function treeRss() {
  const children = new Map();
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(pid)]);
    } catch {}
  }
  let total = 0;
  const visit = (pid) => {
    try {
      const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      total += Number(rss?.[1] ?? 0) * 1024;
    } catch {}
    for (const child of children.get(pid) ?? []) visit(child);
  };
  visit(process.pid);
  return total;
}

async function start(models) {
  const dir = mkdtempSync(join(tmpdir(), 'voxd-bench-'));
  const voxd = await startBenchServer(dir, models);
  return {
    voxd,
    close: async () => {
      await voxd.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function post(url, route, body) {
  const res = await fetch(url + route, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const bytes = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200) throw new Error(`${route}: ${res.status} ${bytes.toString()}`);
  return bytes;
}

// Test audio for the recognisers: the sentence spoken by flite.
const speaker = await start([{ id: 'flite', family: 'flite_tts', task: 'tts', lazy: true }]);
const wav = (await post(speaker.voxd.url, '/v1/audio/speech', { model: 'flite', input: SENTENCE })).toString(
  'base64',
);
await speaker.close();

/** One load round against `url`: completed requests per second with 2 x slots in flight. */
async function round(engine, url, slots, bodyFile, lags) {
  // A fresh monitor per round (the worst round is reported): one re-enabled across rounds would
  // count the pause between them as a delay.
  const lag = monitorEventLoopDelay({ resolution: 1 });
  lag.enable();
  const started = performance.now();
  const load = spawn(
    process.execPath,
    [LOAD, url + engine.route, bodyFile, String(slots * 2), String(SECONDS)],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let out = '';
  load.stdout.on('data', (chunk) => {
    out += chunk;
  });
  const code = await new Promise((resolve) => load.on('exit', resolve));
  lag.disable();
  lags.push(lag);
  if (code !== 0) throw new Error(`load generator failed for ${engine.id}`);
  return Number(out.trim()) / ((performance.now() - started) / 1000);
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

const rows = [];
const bodyFile = join(tmpdir(), `voxd-bench-body-${process.pid}.json`);
for (const engine of ENGINES.filter((e) => ONLY.size === 0 || ONLY.has(e.id))) {
  writeFileSync(bodyFile, JSON.stringify(engine.body(wav)));
  // One server per slot count, all alive at once, and their rounds interleaved (1, 2, 4, 1, 2, 4,
  // ...) so that a slow spell of this shared machine does not land on one slot count only.
  const configs = [];
  for (const slots of [1, 2, 4]) {
    global.gc?.();
    const rssBefore = treeRss();
    const server = await start([
      { id: engine.id, family: engine.family, task: engine.task, lazy: true, slots },
    ]);
    await Promise.all(
      Array.from({ length: slots }, () => post(server.voxd.url, engine.route, engine.body(wav))),
    ); // warm every slot
    const mbPerSlot = (treeRss() - rssBefore) / slots / 1048576;
    configs.push({ slots, server, mbPerSlot, lags: [], runs: [] });
  }
  for (let i = 0; i < ROUNDS; i++)
    for (const c of configs) c.runs.push(await round(engine, c.server.voxd.url, c.slots, bodyFile, c.lags));
  const base = median(configs[0].runs);
  for (const c of configs) {
    await c.server.close();
    const throughput = median(c.runs);
    rows.push({
      engine: engine.id,
      slots: c.slots,
      throughput: throughput.toFixed(2),
      runs: c.runs.map((r) => r.toFixed(1)).join(', '),
      speedup: (throughput / base).toFixed(2),
      mbPerSlot: c.mbPerSlot.toFixed(0),
      lagP99: (Math.max(...c.lags.map((l) => l.percentile(99))) / 1e6).toFixed(1),
      lagMax: (Math.max(...c.lags.map((l) => l.max)) / 1e6).toFixed(1),
    });
    console.error(JSON.stringify(rows.at(-1)));
  }
}
rmSync(bodyFile, { force: true });
console.log(
  '| engine | slots | requests/s (median) | rounds | speedup vs 1 slot | RSS per slot (MB) | event-loop lag p99 (ms) | max (ms) |',
);
console.log('|---|---:|---:|---|---:|---:|---:|---:|');
for (const r of rows)
  console.log(
    `| ${r.engine} | ${r.slots} | ${r.throughput} | ${r.runs} | ${r.speedup} | ${r.mbPerSlot} | ${r.lagP99} | ${r.lagMax} |`,
  );
