// What a model's slots cost when each has its own copy of the weights (isolation "session": one
// runner process per slot) and when they share one (isolation "model": one runner process per
// model), issue 12. A weight-heavy fake NeMo CTC model (scripts/gen-test-models.py --weights-mb,
// made once into a temp folder) is served by a real `voxd serve --parallel-jobs` child; loud 1 s
// tones, which the fake transcribes as "hello world", are posted to /v1/audio/transcriptions.
// - memory: PSS and RSS of the server and every process under it, less the idle server before the
//   model loads, after 1 request at slots=1, after 1 and then 4 concurrent requests at slots=4;
// - throughput: requests/s with N requests in flight on N slots (N = 1, 2, 4), the modes' servers
//   up side by side and measured in turns (--rounds), the median kept.
// A mode passes `isolation` in the model's config only when this build knows the key; a build
// without it runs every slot in its own runner process, so "session" is then measured with the key
// omitted and "model" is reported as not measurable rather than measured as something else.
// Usage: npm run build && node scripts/bench-shared-weights.mjs [--weights-mb=300] [--seconds=10]
//   [--rounds=3] [--modes=session,model] [--models-dir=DIR]
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { encodeWav } from '../dist/src/audio/wav-encode.js';
import { loadServerConfig } from '../dist/src/config/server-config.js';
import { createEngineCatalog } from '../dist/src/engines/catalog.js';

const option = (name, fallback) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const WEIGHTS_MB = Number(option('weights-mb', '300'));
const SECONDS = Number(option('seconds', '10'));
const ROUNDS = Number(option('rounds', '3'));
const MODES = option('modes', 'session,model').split(',');
const MODELS_DIR = option('models-dir', join(tmpdir(), 'voxd-bench-models'));
const SLOTS = [1, 2, 4];
const EXPECTED = 'hello world';
for (const mode of MODES)
  if (!['session', 'model'].includes(mode)) throw new Error(`--modes: unknown mode ${mode}`);

const started = performance.now();
const progress = (message) => process.stderr.write(`[bench-shared-weights] ${message}\n`);
const dir = mkdtempSync(join(tmpdir(), 'voxd-bench-shared-'));

/** The heavy fake's folder, generated (and python3-onnx installed) when it is not there yet. */
function heavyModel() {
  const folder = join(MODELS_DIR, `fake-nemo-ctc-${WEIGHTS_MB}mb`);
  if (existsSync(join(folder, 'model.onnx'))) return folder;
  const python = '/usr/bin/python3';
  if (spawnSync(python, ['-c', 'import onnx']).status !== 0) {
    progress('the model generator needs python3-onnx, which is missing: installing it with apt-get');
    try {
      execFileSync('sh', ['-c', 'apt-get update -qq && apt-get install -y -qq python3-onnx'], {
        stdio: 'inherit',
      });
    } catch {
      throw new Error(
        'could not install python3-onnx; run `apt-get install python3-onnx` as root and try again',
      );
    }
  }
  progress(`generating a ${WEIGHTS_MB} MiB fake NeMo CTC model into ${folder}`);
  mkdirSync(MODELS_DIR, { recursive: true });
  // Generated beside the target and renamed, so an interrupted run leaves no half-written model.
  const scratch = mkdtempSync(join(MODELS_DIR, 'partial-'));
  execFileSync(
    python,
    ['scripts/gen-test-models.py', `--weights-mb=${WEIGHTS_MB}`, `--out=${scratch}`, 'nemo_ctc'],
    {
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  renameSync(join(scratch, `fake-nemo-ctc-${WEIGHTS_MB}mb`), folder);
  rmSync(scratch, { recursive: true, force: true });
  return folder;
}

/** Whether this build's config knows the model key `isolation` (an unknown key is a notice). */
function knowsIsolation() {
  const path = join(dir, 'probe.json');
  const model = {
    id: 'asr',
    family: 'nemo_ctc_asr',
    task: 'asr',
    path: dir,
    lazy: true,
    isolation: 'session',
  };
  writeFileSync(path, JSON.stringify({ models: [model] }));
  try {
    const { notices } = loadServerConfig({
      configPath: path,
      overrides: { parallel_jobs: true },
      knownFamilies: [...createEngineCatalog().keys()],
    });
    return !notices.some((n) => /isolation/.test(n.key));
  } catch {
    return false;
  }
}

// A loud 1 s tone as a multipart upload, built once.
const BOUNDARY = 'voxd-bench-shared-weights';
const wav = encodeWav({
  samples: Float32Array.from({ length: 16000 }, (_, i) => 0.3 * Math.sin(i / 7)),
  sampleRate: 16000,
  channels: 1,
});
const BODY = Buffer.concat([
  Buffer.from(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\nasr\r\n` +
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="tone.wav"\r\n` +
      'Content-Type: audio/wav\r\n\r\n',
  ),
  wav,
  Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
]);

/** One transcription; rejects unless the fake answered with its known text. */
function transcribe(agent, url) {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/v1/audio/transcriptions`,
      { method: 'POST', agent, headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` } },
      (res) => {
        const parts = [];
        res.on('data', (d) => parts.push(d));
        res.on('end', () => {
          const body = Buffer.concat(parts).toString();
          if (res.statusCode !== 200) return reject(new Error(`${res.statusCode} ${body}`));
          const { text } = JSON.parse(body);
          return text === EXPECTED ? resolve() : reject(new Error(`transcribed ${JSON.stringify(text)}`));
        });
      },
    );
    req.on('error', reject);
    req.end(BODY);
  });
}

/** Servers still up: asked to stop (SIGTERM, which also ends their runners) if this script fails or is stopped. */
const live = new Set();
process.on('exit', () => {
  for (const child of live) child.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(130));

/** `voxd serve` in a child process with the heavy model at `slots`; `isolation` only when given. */
async function startServer(folder, slots, isolation) {
  const model = { id: 'asr', family: 'nemo_ctc_asr', task: 'asr', path: folder, lazy: true, slots };
  if (isolation) model.isolation = isolation;
  const config = join(dir, `server-${slots}-${isolation ?? 'omitted'}.json`);
  writeFileSync(config, JSON.stringify({ ui: false, busy_timeout_ms: 0, models: [model] }));
  const child = spawn(
    process.execPath,
    ['dist/src/cli/main.js', 'serve', '--config', config, '--port', '0', '--parallel-jobs'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  live.add(child);
  child.once('exit', () => live.delete(child));
  let log = '';
  const url = await new Promise((resolve, reject) => {
    child.stderr.on('data', (d) => {
      log += d;
      const m = /listening on (\S+)/.exec(log);
      if (m) resolve(m[1]);
    });
    child.on('exit', () => reject(new Error(`voxd exited: ${log}`)));
  });
  const agent = new Agent({ keepAlive: true, maxSockets: 16 });
  return {
    pid: child.pid,
    url,
    agent,
    log: () => log,
    async close() {
      agent.destroy();
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** `pid` and every process below it (from each process's parent in /proc/<pid>/stat). */
function tree(pid) {
  const children = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // The process ended while the table was read.
    }
  }
  const all = [pid];
  for (let i = 0; i < all.length; i++) all.push(...(children.get(all[i]) ?? []));
  return all;
}

/** PSS and RSS (MB) summed over the server's process tree; its runner processes' count and PSS. */
function memory(pid) {
  let pss = 0;
  let rss = 0;
  let runners = 0;
  let runnersPss = 0;
  for (const p of tree(pid)) {
    try {
      const rollup = readFileSync(`/proc/${p}/smaps_rollup`, 'utf8');
      const own = Number(/^Pss:\s+(\d+) kB/m.exec(rollup)[1]) / 1024;
      pss += own;
      rss += Number(/^Rss:\s+(\d+) kB/m.exec(rollup)[1]) / 1024;
      if (p !== pid && readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('engine-process.js')) {
        runners++;
        runnersPss += own;
      }
    } catch {
      // The process ended while it was read.
    }
  }
  return { pss, rss, runners, runnersPss };
}

/**
 * Sends `n` concurrent requests, again until `runners` runner processes are up (a runner starts on
 * its slot's first request). Slots that share one process cannot be counted, so they get 3 rounds.
 */
async function warm(server, n, runners) {
  for (let round = 1; round <= 5; round++) {
    await Promise.all(Array.from({ length: n }, () => transcribe(server.agent, server.url)));
    if (memory(server.pid).runners >= runners && (runners === n || round >= 3)) return;
  }
}

/** Requests completed per second with `n` callers each looping one request for SECONDS. */
async function closedLoop(server, n) {
  const end = performance.now() + SECONDS * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (performance.now() < end) {
        await transcribe(server.agent, server.url);
        done++;
      }
    }),
  );
  return done / SECONDS;
}

const folder = heavyModel();
const supported = knowsIsolation();
/** What each mode passes as `isolation`: nothing when this build would ignore the key. */
const modes = MODES.map((mode) => ({
  mode,
  isolation: supported ? mode : undefined,
  label: supported || mode !== 'session' ? mode : 'session (key omitted)',
  measurable: supported || mode === 'session',
}));
if (!supported)
  progress(
    'this build has no model key `isolation`: "session" is measured with the key omitted, "model" is not measured',
  );
const measured = modes.filter((m) => m.measurable);

// Memory, one server at a time. A session-isolated model runs a runner process per warm slot; a
// model-isolated one a single process, whatever the slots.
const memoryRows = [];
for (const m of measured) {
  for (const [slots, steps] of [
    [1, [1]],
    [4, [1, 4]],
  ]) {
    const server = await startServer(folder, slots, m.isolation);
    await sleep(1000);
    const idle = memory(server.pid);
    for (const n of steps) {
      await warm(server, n, m.mode === 'model' ? 1 : n);
      await sleep(1000);
      const now = memory(server.pid);
      memoryRows.push({ ...m, slots, warm: n, idle, now });
      progress(
        `memory ${m.label} slots=${slots} warm=${n}: ${JSON.stringify(now)} idle ${JSON.stringify(idle)}`,
      );
    }
    await server.close();
  }
}

// Throughput: at each N, every mode's server is up and warm, and the rounds alternate between them.
const throughputRows = [];
for (const n of SLOTS) {
  const servers = [];
  for (const m of measured) {
    const server = await startServer(folder, n, m.isolation);
    await warm(server, n, m.mode === 'model' ? 1 : n);
    servers.push({ ...m, server, runs: [] });
  }
  for (let r = 0; r < ROUNDS; r++)
    for (const s of servers) {
      s.runs.push(await closedLoop(s.server, n));
      progress(`throughput ${s.label} n=${n} round ${r + 1}: ${s.runs.at(-1).toFixed(1)} requests/s`);
    }
  for (const s of servers) {
    await s.server.close();
    const median = [...s.runs].sort((a, b) => a - b)[Math.floor(s.runs.length / 2)];
    throughputRows.push({ mode: s.mode, label: s.label, n, median, runs: s.runs });
  }
}

const mb = (x) => x.toFixed(0);
console.log(
  `Command: \`node scripts/bench-shared-weights.mjs --weights-mb=${WEIGHTS_MB} --seconds=${SECONDS} --rounds=${ROUNDS} --modes=${MODES.join(',')}\``,
);
console.log('');
console.log(
  '| isolation | slots | warm slots | runner processes | PSS over idle (MB) | of which runners | RSS over idle (MB) | PSS vs 1 slot |',
);
console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
for (const m of modes) {
  if (!m.measurable) {
    console.log(`| ${m.label} | 1, 4 | | not measured: this build has no \`isolation\` key | | | | |`);
    continue;
  }
  const rows = memoryRows.filter((r) => r.mode === m.mode);
  const one = rows.find((r) => r.slots === 1);
  for (const r of rows) {
    const pss = r.now.pss - r.idle.pss;
    console.log(
      `| ${r.label} | ${r.slots} | ${r.warm} | ${r.now.runners} | ${mb(pss)} | ${mb(r.now.runnersPss)} | ${mb(r.now.rss - r.idle.rss)} | ${(pss / (one.now.pss - one.idle.pss)).toFixed(2)} |`,
    );
  }
}
console.log('');
const header = modes.map((m) => `${m.label} (requests/s)`).join(' | ');
const ratio = modes.length === 2 ? ' | model / session' : '';
console.log(`| slots = requests in flight | ${header}${ratio} | rounds |`);
console.log(`|---:|${modes.map(() => '---:|').join('')}${ratio ? '---:|' : ''}---|`);
for (const n of SLOTS) {
  const of = (mode) => throughputRows.find((r) => r.mode === mode && r.n === n);
  const cells = modes.map((m) => (m.measurable ? of(m.mode).median.toFixed(1) : 'not measured'));
  const both = of('session') && of('model');
  const share = ratio
    ? ` | ${both ? (of('model').median / of('session').median).toFixed(2) : 'pending'}`
    : '';
  const rounds = measured
    .map((m) =>
      of(m.mode)
        .runs.map((x) => x.toFixed(1))
        .join(', '),
    )
    .join('; ');
  console.log(`| ${n} | ${cells.join(' | ')}${share} | ${rounds} |`);
}
progress(`took ${((performance.now() - started) / 1000).toFixed(0)} s`);
