// Benchmark of the embedded engines under --parallel-jobs: throughput with 1, 2 and 4 slots,
// resident memory per slot, and event-loop lag while the server is loaded. Not a test: it prints
// a Markdown table for docs/performance.md.
// Usage: npm run build && node scripts/bench-engines.mjs [seconds-per-run] [engine ids...]
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { startVoxd } from '../dist/src/app.js';
import { loadServerConfig } from '../dist/src/config/server-config.js';
import { createEngineCatalog } from '../dist/src/engines/catalog.js';

const SECONDS = Number(process.argv[2] ?? 6);
const ONLY = new Set(process.argv.slice(3));
const LOAD = fileURLToPath(new URL('./bench-load.mjs', import.meta.url));
const SENTENCE =
  'The quick brown fox jumps over the lazy dog while seven happy children watch from the old wooden bridge today.';

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
  const path = join(dir, 'server.json');
  writeFileSync(path, JSON.stringify({ ui: false, busy_timeout_ms: 0, models }));
  const catalog = createEngineCatalog();
  const { config } = loadServerConfig({
    configPath: path,
    overrides: { port: 0, parallel_jobs: true },
    knownFamilies: [...catalog.keys()],
  });
  const voxd = await startVoxd({ config, catalog, log: () => {} });
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

const rows = [];
for (const engine of ENGINES.filter((e) => ONLY.size === 0 || ONLY.has(e.id))) {
  const base = {};
  for (const slots of [1, 2, 4]) {
    global.gc?.();
    const rssBefore = treeRss();
    const server = await start([
      { id: engine.id, family: engine.family, task: engine.task, lazy: true, slots },
    ]);
    const url = server.voxd.url;
    await Promise.all(Array.from({ length: slots }, () => post(url, engine.route, engine.body(wav)))); // warm every slot
    const rssWarm = treeRss();
    const lag = monitorEventLoopDelay({ resolution: 1 });
    const bodyFile = join(tmpdir(), `voxd-bench-body-${process.pid}.json`);
    writeFileSync(bodyFile, JSON.stringify(engine.body(wav)));
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
    if (code !== 0) throw new Error(`load generator failed for ${engine.id}`);
    const done = Number(out.trim());
    const elapsed = (performance.now() - started) / 1000;
    lag.disable();
    await server.close();
    const throughput = done / elapsed;
    if (slots === 1) base.throughput = throughput;
    rows.push({
      engine: engine.id,
      slots,
      throughput: throughput.toFixed(2),
      speedup: (throughput / base.throughput).toFixed(2),
      mbPerSlot: ((rssWarm - rssBefore) / slots / 1048576).toFixed(0),
      lagP99: (lag.percentile(99) / 1e6).toFixed(1),
      lagMax: (lag.max / 1e6).toFixed(1),
    });
    console.error(JSON.stringify(rows.at(-1)));
  }
}
console.log(
  '| engine | slots | requests/s | speedup vs 1 slot | RSS per slot (MB) | event-loop lag p99 (ms) | max (ms) |',
);
console.log('|---|---:|---:|---:|---:|---:|---:|');
for (const r of rows)
  console.log(
    `| ${r.engine} | ${r.slots} | ${r.throughput} | ${r.speedup} | ${r.mbPerSlot} | ${r.lagP99} | ${r.lagMax} |`,
  );
