// Chaos soak: one real `voxd serve --parallel-jobs --enable-fixture` process, driven over HTTP for a
// while by a seeded random mix of requests, faults, disconnects and management calls, with the
// contract's invariants checked as it goes and at the end (see docs/reliability.md, Chaos soak).
// Usage: npm run soak -- [--seconds N] [--seed S] [--clients C] [--leak-kb K] [--secure]
// (default 60 s, a random seed, 12 clients; --leak-kb makes every fixture run after the baseline
// keep K KiB in voxd for good, the fixture's test-only leak, to see the memory check fail;
// --secure serves HTTPS with API keys, as a deployment would, and adds refused keys to the mix)
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WebSocket } from 'ws';
import { wavHeader } from '../dist/src/audio/wav-encode.js';
import { mulberry32 } from '../dist/test/helpers/prng.js';
import { frameOf as wyomingFrame } from '../dist/test/helpers/wyoming.js';

const MAIN = fileURLToPath(new URL('../dist/src/cli/main.js', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : fallback;
}
const SECONDS = Number(arg('seconds', '60'));
const SEED = Number(arg('seed', String(Math.floor(Math.random() * 2 ** 31))));
const CLIENTS = Number(arg('clients', '12'));
const LEAK_KB = Number(arg('leak-kb', '0'));
const SECURE = process.argv.includes('--secure');
if (!(SECONDS > 0) || !Number.isInteger(SEED) || !(LEAK_KB >= 0)) {
  console.error('usage: npm run soak -- [--seconds N] [--seed S] [--clients C] [--leak-kb K] [--secure]');
  process.exit(2);
}
const REPLAY = `npm run soak -- --seconds ${SECONDS} --seed ${SEED} --clients ${CLIENTS}${LEAK_KB ? ` --leak-kb ${LEAK_KB}` : ''}${SECURE ? ' --secure' : ''}`;
/** Set once the baseline is taken: only then do runs leak (--leak-kb). */
let leaking = false;

// The tests' mulberry32 (built by `npm run soak`'s set-up): a seed replays the same choices.
const rand = mulberry32(SEED);
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
const pick = (xs) => xs[Math.floor(rand() * xs.length)];

// Generous: a request the contract lets wait (busy_timeout_ms below) still answers well inside it.
const REQUEST_DEADLINE_MS = 30_000;
const SHUTDOWN_TIMEOUT_MS = 3000;
const MAX_INFERENCE_MS = 400;
const WD = 'wd-asr';

const dir = mkdtempSync(join(tmpdir(), 'voxd-soak-'));
const fixture = (id, task, extra = {}) => ({ id, family: 'fixture', path: '.', task, ...extra });
const MODELS = {
  'tone-a': fixture('tone-a', 'tts', { slots: 2 }),
  'asr-s': fixture('asr-s', 'asr', { mode: 'streaming', slots: 3 }),
  diar: fixture('diar', 'diar', { slots: 1, load_options: { load_ms: 150 } }),
  [WD]: fixture(WD, 'asr', { slots: 4, max_inference_ms: MAX_INFERENCE_MS }),
  flite: { id: 'flite', family: 'flite_tts', task: 'tts', mode: 'streaming' },
  // Realtime sessions' server VAD probes it (chunking_vad_model's default id).
  'silero-vad': { id: 'silero-vad', family: 'silero_vad', task: 'vad' },
  // A live-input engine: realtime turns under server VAD and Wyoming transcriptions at speaking
  // pace are heard as they are spoken, holding its slot meanwhile (the leave-mid-turn ops).
  pocketsphinx: { id: 'pocketsphinx', family: 'pocketsphinx_asr', task: 'asr', mode: 'streaming' },
};
// --secure: the committed test certificate (for 127.0.0.1) and two keys. Every request carries the
// admin key unless it says otherwise.
const TLS_DIR = join(REPO_ROOT, 'test', 'fixtures', 'tls');
const CA = SECURE ? readFileSync(join(TLS_DIR, 'cert.pem')) : undefined;
const ADMIN_KEY = 'sk-soak-admin-5e1d';
const APP_KEY = 'sk-soak-app-77c0';
const secure = SECURE
  ? {
      tls_cert_file: join(TLS_DIR, 'cert.pem'),
      tls_key_file: join(TLS_DIR, 'key.pem'),
      api_keys: [
        { key: ADMIN_KEY, scope: 'admin' },
        { key: APP_KEY, scope: 'inference' },
      ],
    }
  : {};
const config = {
  ...secure,
  host: '127.0.0.1',
  port: 0,
  ui: false,
  ui_management: true,
  // Lower than the number of models, so loads evict; short idle retirement so it happens mid-run.
  // (5 for 7: a live turn needs two models at once, pocketsphinx and silero for its server VAD;
  // with fewer places the fixtures' traffic keeps them all busy and the leave-mid-turn ops are
  // mostly refused 503 residency_full before their turn is ever live.)
  max_loaded_models: 5,
  idle_unload_ms: 1200,
  shutdown_timeout_ms: SHUTDOWN_TIMEOUT_MS,
  busy_timeout_ms: 8000,
  // audio.cpp's WebSocket bridge, driven by the bridge ops.
  frontend_listener: 'websocket',
  // The Wyoming listener, driven by the wyoming ops.
  wyoming_port: 0,
  models: Object.values(MODELS),
};
const configPath = join(dir, 'server.json');
writeFileSync(configPath, JSON.stringify(config));

const violations = [];
function violation(what) {
  violations.push(what);
  console.error(`VIOLATION: ${what}`);
}

// --- the server -----------------------------------------------------------------------------------
// Not detached: in the soak's own process group, so a Ctrl-C or a CI job killing that group stops
// voxd too; the soak itself stops voxd and its runners by pid on every way out it sees.
const child = spawn(
  process.execPath,
  [MAIN, 'serve', '--config', configPath, '--parallel-jobs', '--enable-fixture'],
  {
    cwd: REPO_ROOT,
    // The fixture's in-process event record is read by no one here: kept small, it does not
    // count in the memory check.
    env: { ...process.env, VOXD_DATA_DIR: dir, VOXD_FIXTURE_RECORD_LIMIT: '1000' },
    stdio: ['ignore', 'ignore', 'pipe'],
  },
);
let stderr = '';
let exited = null;
const closed = new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
closed.then((e) => {
  exited = e;
});
child.stderr.setEncoding('utf8');
child.stderr.on('data', (s) => {
  stderr += s;
  if (stderr.length > 4_000_000) stderr = stderr.slice(-2_000_000);
});

/** Every runner pid seen under voxd, so that one orphaned by voxd's exit can still be found. */
const runners = new Set();
const alive = (pid) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(REPO_ROOT);
  } catch {
    return false;
  }
};
function killAll(signal) {
  for (const pid of [child.pid, ...descendants(), ...runners]) {
    if (pid === child.pid ? exited === null : alive(pid)) {
      try {
        process.kill(pid, signal);
      } catch {}
    }
  }
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.once(signal, () => {
    killAll('SIGKILL');
    process.exit(130);
  });
}
process.once('exit', () => {
  killAll('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function listening() {
  const end = Date.now() + 20_000;
  while (Date.now() < end) {
    const m = stderr.match(/voxd listening on (https?:\/\/127\.0\.0\.1:\d+)/);
    if (m) return m[1];
    if (exited) throw new Error(`voxd exited at startup: ${JSON.stringify(exited)}\n${stderr}`);
    await sleep(20);
  }
  throw new Error(`voxd did not listen within 20 s\n${stderr}`);
}

// --- HTTP -----------------------------------------------------------------------------------------
let BASE = '';

/**
 * One request; resolves { status, body } or { status: 'aborted' } (we cut it) or { status: 'hang' }
 * (past the deadline) or { status: 'neterr' }. `abortAfter(ms)` or `abortOn: 'first-chunk'` cuts it.
 * With --secure it goes over TLS with `apiKey` (the admin key unless given; null: none).
 */
function call(
  method,
  path,
  { json, raw, chunks, abortAfter, abortOnFirstChunk, apiKey = ADMIN_KEY, binary = false } = {},
) {
  return new Promise((resolve) => {
    const t0 = performance.now();
    let settled = false;
    const done = (r) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      clearTimeout(aborter);
      resolve({ ...r, ms: performance.now() - t0 });
    };
    const headers = {};
    let body;
    if (json !== undefined) {
      body = JSON.stringify(json);
      headers['content-type'] = 'application/json';
    } else if (raw !== undefined) {
      body = raw.body;
      headers['content-type'] = raw.type;
    }
    if (chunks) headers['transfer-encoding'] = 'chunked';
    if (SECURE && apiKey) headers.authorization = `Bearer ${apiKey}`;
    const send = SECURE ? httpsRequest : httpRequest;
    const req = send(`${BASE}${path}`, { method, agent: false, headers, ca: CA }, (res) => {
      let text = '';
      const pieces = [];
      if (!binary) res.setEncoding('utf8');
      res.on('data', (s) => {
        if (binary) pieces.push(s);
        else text += s;
        if (abortOnFirstChunk) {
          req.destroy();
          done({ status: 'aborted', phase: 'mid-stream' });
        }
      });
      res.on('end', () => done({ status: res.statusCode, body: binary ? Buffer.concat(pieces) : text }));
      res.on('error', () => done({ status: 'aborted' }));
      res.on('aborted', () => done({ status: 'neterr', body: text }));
    });
    req.on('error', (err) => done({ status: settled ? 'aborted' : 'neterr', error: err.message }));
    const deadline = setTimeout(() => {
      req.destroy();
      done({ status: 'hang' });
    }, REQUEST_DEADLINE_MS);
    const aborter =
      abortAfter !== undefined
        ? setTimeout(() => {
            req.destroy();
            done({ status: 'aborted' });
          }, abortAfter)
        : undefined;
    if (chunks) {
      (async () => {
        for (const c of chunks) {
          if (settled) return;
          req.write(c);
          await sleep(int(5, 30));
        }
        req.end();
      })();
    } else req.end(body);
  });
}

const getJson = async (path) => {
  const r = await call('GET', path);
  return r.status === 200 ? JSON.parse(r.body) : null;
};

// --- process measurements -------------------------------------------------------------------------
const fdCount = () => readdirSync(`/proc/${child.pid}/fd`).length;
/** CPU seconds voxd and the runner processes it reaped have used so far (/proc/<pid>/stat). */
function cpuSeconds() {
  const stat = readFileSync(`/proc/${child.pid}/stat`, 'latin1');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime, stime, cutime, cstime, in clock ticks (100 a second on Linux).
  return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / 100;
}
const rssKb = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))[1]);
/** A gauge of voxd's own /metrics, in MiB (NaN when absent). */
function gaugeMb(body, name) {
  const m = new RegExp(`^${name} (\\S+)`, 'm').exec(body ?? '');
  return m ? Number(m[1]) / 2 ** 20 : Number.NaN;
}
/** Where voxd's memory is, for the phase lines: RSS, then V8's heap (used/committed) and off-heap buffers. */
async function memoryLine() {
  const body = (await call('GET', '/metrics')).body;
  const mb = (name) => gaugeMb(body, name).toFixed(1);
  return `RSS ${(rssKb() / 1024).toFixed(1)} MiB, heap ${mb('nodejs_heap_size_used_bytes')}/${mb('nodejs_heap_size_total_bytes')} MiB, external ${mb('nodejs_external_memory_bytes')} MiB`;
}

/**
 * fds and memory of an idle voxd, in MiB. RSS alone does not tell a leak: under load V8 grows its
 * heap reservation (the young generation doubles up to its configured maximum) and gives it back
 * only on its own schedule, so a server that holds nothing more can still show tens of MiB more RSS
 * (see docs/reliability.md). Memory is therefore split the way a leak would show: `heap` is the
 * JS heap in use less its compiled code and bytecode (`code`, which grows while code paths are
 * first run and optimised, then stops), so a JS leak grows it; `inUse` is what the C allocator
 * has handed out and not had back (ArrayBuffer contents, node's and V8's own allocations), so a
 * native leak grows it; `native` is RSS minus the part of V8's heap that is resident: `inUse`,
 * plus the allocator's kept free blocks (`free`, which churn leaves behind, a few MiB), plus code
 * and stacks. Not RSS minus the committed heap: V8 commits heap pages before it touches them, so
 * that difference dips by as much as the heap just grew. `rss` is reported beside them. Each is the
 * lowest of five samples after QUIET_MS of nothing; the end keeps sampling, up to QUIET_MAX_MS,
 * until everything is back within `limit`.
 */
const QUIET_MS = 8000;
const QUIET_MAX_MS = 30_000;
async function quietSample(limit) {
  await sleep(QUIET_MS);
  const until = Date.now() + QUIET_MAX_MS - QUIET_MS;
  const m = {
    fd: Infinity,
    rss: Infinity,
    native: Infinity,
    inUse: Infinity,
    free: Infinity,
    heap: Infinity,
    code: Infinity,
    committed: Infinity,
  };
  const within = () =>
    !limit ||
    (m.fd <= limit.fd && m.native <= limit.native && m.inUse <= limit.inUse && m.heap <= limit.heap);
  for (let i = 0; i < 5 || (Date.now() < until && !within()); i++) {
    const body = (await call('GET', '/metrics')).body;
    const rss = rssKb() / 1024;
    const committed = gaugeMb(body, 'nodejs_heap_size_total_bytes');
    m.fd = Math.min(m.fd, fdCount());
    m.rss = Math.min(m.rss, rss);
    m.native = Math.min(m.native, rss - gaugeMb(body, 'voxd_heap_resident_bytes'));
    m.inUse = Math.min(m.inUse, gaugeMb(body, 'voxd_malloc_in_use_bytes'));
    m.free = Math.min(m.free, gaugeMb(body, 'voxd_malloc_free_bytes'));
    const code = gaugeMb(body, 'voxd_heap_code_bytes');
    m.heap = Math.min(m.heap, gaugeMb(body, 'nodejs_heap_size_used_bytes') - code);
    m.code = Math.min(m.code, code);
    m.committed = Math.min(m.committed, committed);
    await sleep(300);
  }
  return { ...m, children: descendants() };
}

/** The bound a quiet measure must come back within: 10 %, or 2 MiB for a small figure (GC timing). */
const bound = (base) => Math.max(base * 1.1, base + 2);

/** Descendants of voxd (runner processes), by walking /proc's parent links. */
function descendants() {
  const parent = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parent.set(Number(name), ppid);
    } catch {}
  }
  const out = [];
  for (const [pid] of parent) {
    for (let p = parent.get(pid); p !== undefined && p > 1; p = parent.get(p)) {
      if (p === child.pid) {
        out.push(pid);
        runners.add(pid);
        break;
      }
    }
  }
  return out;
}

// --- what the contract allows ---------------------------------------------------------------------
const stats = new Map(); // kind -> Map(status -> count)
const latencies = new Map(); // kind -> ms[]
let requests = 0;
/** Per model: when the last injected crash or watchdog kill may still be felt by its neighbours. */
const faultUntil = new Map();

function record(kind, r) {
  requests += 1;
  const key =
    r.status === 503 || r.status === 500 || r.status === 504
      ? `${r.status} ${r.code ?? ''}`.trim()
      : String(r.status);
  if (!stats.has(kind)) stats.set(kind, new Map());
  stats.get(kind).set(key, (stats.get(kind).get(key) ?? 0) + 1);
  if (typeof r.status === 'number') {
    if (!latencies.has(kind)) latencies.set(kind, []);
    latencies.get(kind).push(r.ms);
  }
}

function errorOf(r) {
  try {
    return JSON.parse(r.body).error ?? null;
  } catch {
    return null;
  }
}

/** The error event of an SSE body, if any, and whether it ended with [DONE]. */
function sseOutcome(body) {
  let error = null;
  for (const line of body.split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    try {
      const ev = JSON.parse(line.slice(6));
      if (ev.type === 'error') error = ev.error;
    } catch {
      return { error: { message: `unparseable event ${line.slice(0, 80)}`, code: 'bad_sse' }, done: false };
    }
  }
  return { error, done: body.includes('data: [DONE]') };
}

/** Answers allowed only because a neighbour's injected fault had just hit the same model. */
let excused = 0;

const BUSY_CODES = new Set(['server_busy', 'queue_full', 'residency_full', 'shutting_down']);

/**
 * Checks one answer. `fault`: the request injected a crash/load failure (500 allowed); `overrun`: it
 * could pass max_inference_ms (504 allowed); `model`: whose neighbours' faults make 500/503 plausible.
 */
function check(kind, r, { fault = false, overrun = false, model, expectAbort = false, sse = false } = {}) {
  const err = r.status === 200 && sse ? sseOutcome(r.body).error : errorOf(r);
  r.code = err?.code;
  const effective =
    r.status === 200 && sse && err
      ? err.type === 'timeout_error'
        ? 504
        : err.type === 'server_error'
          ? 500
          : 503
      : r.status;
  if (r.status === 200 && sse && err) r.status = `200+sse:${err.code}`;
  record(kind, r);
  const near = model !== undefined && performance.now() < (faultUntil.get(model) ?? 0);
  const what = `${kind} on ${model ?? '-'}: ${r.status} ${err ? JSON.stringify(err).slice(0, 300) : ''}`;
  if (r.status === 'hang')
    return violation(`${kind} on ${model}: no answer within ${REQUEST_DEADLINE_MS} ms`);
  if (r.status === 'aborted') return expectAbort ? undefined : violation(`${what}: connection cut unasked`);
  if (r.status === 'neterr') return violation(`${what}: network error ${r.error ?? ''}`);
  if (effective === 200) {
    if (sse && !sseOutcome(r.body).done) violation(`${what}: stream ended without [DONE]`);
    return;
  }
  if (effective === 500 && fault) return;
  if (effective === 504 && overrun) return;
  if (effective === 503 && BUSY_CODES.has(err?.code)) return;
  if (near && (effective === 500 || effective === 503 || effective === 504)) {
    excused += 1;
    return;
  }
  violation(`${what}: not an answer the contract allows here`);
}

/** A request that must be refused with exactly this status and code, whatever else is going on. */
function expectRefusal(kind, r, status, code) {
  const err = errorOf(r);
  r.code = err?.code;
  record(kind, r);
  if (r.status !== status || err?.code !== code)
    violation(`${kind}: ${r.status} ${JSON.stringify(err)?.slice(0, 300)}: expected ${status} ${code}`);
}

// --- the operations -------------------------------------------------------------------------------
const FIXTURES = ['tone-a', 'asr-s', 'diar', WD];

function pcm(ms, rate = 16000) {
  const n = Math.floor((rate * ms) / 1000);
  const b = Buffer.alloc(n * 2);
  for (let i = 0; i < n; i++)
    b.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate)), i * 2);
  return b;
}
function wav(ms, rate = 16000) {
  const data = pcm(ms, rate);
  return Buffer.concat([wavHeader(rate, 1, data.length), data]);
}
const WAV = wav(300);
function multipart(fields, files) {
  const boundary = `soak${int(1e6, 9e6)}`;
  const parts = [];
  for (const [k, v] of Object.entries(fields))
    parts.push(Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`));
  files.forEach((f, i) => {
    parts.push(
      Buffer.from(
        `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="f${i}.wav"\r\ncontent-type: audio/wav\r\n\r\n`,
      ),
      f,
      Buffer.from('\r\n'),
    );
  });
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(parts), type: `multipart/form-data; boundary=${boundary}` };
}

const markFault = (model, ms = 1500) =>
  faultUntil.set(model, Math.max(faultUntil.get(model) ?? 0, performance.now() + ms));

const OPS = [
  [
    20,
    'run',
    async () => {
      const model = pick(FIXTURES);
      const run_ms = int(0, 120);
      const options = { run_ms, ...(leaking && LEAK_KB > 0 ? { leak_kb: LEAK_KB } : {}) };
      const r = await call('POST', '/v1/tasks/run', { json: { model, text: 'soak', options } });
      check('run', r, { model, overrun: model === WD && run_ms > MAX_INFERENCE_MS - 100 });
    },
  ],
  [
    6,
    'speech-flite',
    async () => {
      const stream = rand() < 0.5;
      const r = await call('POST', '/v1/audio/speech', {
        json: { model: 'flite', input: 'Soak test.', ...(stream ? { stream: true } : {}) },
      });
      check(stream ? 'speech-flite-sse' : 'speech-flite', r, { model: 'flite', sse: stream });
    },
  ],
  [
    8,
    'stream',
    async () => {
      const r = await call('POST', '/v1/tasks/stream', {
        json: {
          model: 'asr-s',
          text: 'stream',
          stream_format: 'sse',
          options: { chunks: int(1, 8), chunk_ms: int(0, 30) },
        },
      });
      check('stream', r, { model: 'asr-s', sse: true });
    },
  ],
  [
    5,
    'live',
    async () => {
      const body = pcm(int(100, 400));
      const pieces = [];
      for (let i = 0; i < body.length; i += 3200) pieces.push(body.subarray(i, i + 3200));
      const r = await call('POST', '/v1/audio/transcriptions/live?model=asr-s&sample_rate=16000', {
        chunks: pieces,
      });
      check('live', r, { model: 'asr-s', sse: true });
    },
  ],
  [
    4,
    'batch',
    async () => {
      const model = pick(['tone-a', WD]);
      const requests = Array.from({ length: int(2, 5) }, (_, i) => ({
        text: `b${i}`,
        options: { run_ms: int(0, 50) },
      }));
      const r = await call('POST', '/v1/tasks/batch', { json: { model, requests } });
      check('batch', r, { model, sse: true });
    },
  ],
  [
    3,
    'batch-transcriptions',
    async () => {
      const r = await call('POST', '/v1/batches/transcriptions', {
        raw: multipart({ model: 'asr-s' }, [WAV, WAV]),
      });
      check('batch-transcriptions', r, { model: 'asr-s', sse: true });
    },
  ],
  [
    6,
    'abort-running',
    async () => {
      const model = pick(['tone-a', 'asr-s', WD]);
      const r = await call('POST', '/v1/tasks/run', {
        json: { model, text: 'cut', options: { run_ms: 300 } },
        abortAfter: int(0, 250),
      });
      check('abort-running', r, { model, expectAbort: true });
    },
  ],
  [
    3,
    'abort-queued',
    async () => {
      // diar has one slot: the first request holds it, the second queues and is cut there.
      const holder = call('POST', '/v1/tasks/run', {
        json: { model: 'diar', text: 'hold', options: { run_ms: 250 } },
      });
      await sleep(20);
      const r = await call('POST', '/v1/tasks/run', {
        json: { model: 'diar', text: 'queued' },
        abortAfter: int(20, 150),
      });
      check('abort-queued', r, { model: 'diar', expectAbort: true });
      check('run', await holder, { model: 'diar' });
    },
  ],
  [
    3,
    'abort-loading',
    async () => {
      // diar loads for 150 ms; unloaded first, a request is cut while its load runs.
      check('unload', await call('POST', '/v1/models/unload', { json: { id: 'diar' } }), { model: 'diar' });
      const r = await call('POST', '/v1/tasks/run', {
        json: { model: 'diar', text: 'x' },
        abortAfter: int(10, 140),
      });
      check('abort-loading', r, { model: 'diar', expectAbort: true });
    },
  ],
  [
    4,
    'abort-mid-stream',
    async () => {
      const r = await call('POST', '/v1/tasks/stream', {
        json: { model: 'asr-s', text: 'cut', stream_format: 'sse', options: { chunks: 20, chunk_ms: 30 } },
        abortOnFirstChunk: true,
      });
      check('abort-mid-stream', r, { model: 'asr-s', expectAbort: true, sse: true });
    },
  ],
  [
    3,
    'crash',
    async () => {
      const model = pick(['tone-a', WD]);
      markFault(model);
      const r = await call('POST', '/v1/tasks/run', {
        json: { model, text: 'boom', options: { crash: true } },
      });
      markFault(model);
      // The runner process starts on first use, inside the watchdog's time: on the watched model a
      // slow start under load is a 504 before the crash comes.
      check('crash', r, { model, fault: true, overrun: model === WD });
      if (r.status === 200) violation(`crash on ${model}: 200 for a request whose runner died`);
    },
  ],
  [
    2,
    'spin',
    async () => {
      markFault(WD);
      const r = await call('POST', '/v1/tasks/run', {
        json: { model: WD, text: 'spin', options: { spin: true } },
      });
      markFault(WD);
      check('spin', r, { model: WD, overrun: true });
      if (r.status !== 504 && r.status !== 503)
        violation(`spin on ${WD}: ${r.status}, expected 504 (max_inference_ms)`);
    },
  ],
  [
    2,
    'overrun',
    async () => {
      markFault(WD);
      const r = await call('POST', '/v1/tasks/run', {
        json: { model: WD, text: 'slow', options: { run_ms: MAX_INFERENCE_MS + 300 } },
      });
      markFault(WD);
      check('overrun', r, { model: WD, overrun: true });
    },
  ],
  [
    3,
    'reconfigure',
    async () => {
      const id = pick(['tone-a', 'asr-s', WD]);
      const body = {
        ...MODELS[id],
        slots: int(1, 4),
        load_options: { ...(MODELS[id].load_options ?? {}), seed_tag: int(0, 3) },
      };
      // A reconfiguration unloads the model: running neighbours may see it go.
      const r = await call('POST', '/v1/models/load', { json: body });
      check('reconfigure', r, { model: id });
    },
  ],
  [
    2,
    'register-broken',
    async () => {
      const r = await call('POST', '/v1/models/load', {
        json: { id: 'broken', family: 'fixture', path: '.', task: 'asr', load_options: { fail_load: true } },
      });
      check('register-broken', r, { model: 'broken', fault: true });
      // 503 when max_loaded_models is reached with every loaded model busy: the load never began.
      if (r.status === 200) violation('register-broken: 200 for a load that must fail');
    },
  ],
  [
    2,
    'unload',
    async () => {
      const id = pick(Object.keys(MODELS));
      check('unload', await call('POST', '/v1/models/unload', { json: { id } }), { model: id });
    },
  ],
  [
    1,
    'unload-bulk',
    async () => {
      const ids = [pick(FIXTURES), pick(FIXTURES), 'zzz'];
      check('unload-bulk', await call('POST', '/v1/tasks/unload_models', { json: { model_ids: ids } }));
    },
  ],
  [
    0.5,
    'unload-all',
    async () => {
      check('unload-all', await call('POST', '/v1/tasks/unload_all_models'));
    },
  ],
  ...(SECURE
    ? [
        [
          3,
          'auth',
          async () => {
            // Keys refused, whatever else is going on: none, an unknown one, too narrow a scope
            // (on unload-all, which would show if it got through); and the inference key let in.
            const model = pick(FIXTURES);
            const json = { model, text: 'soak' };
            const which = int(0, 3);
            if (which === 0) {
              const r = await call('POST', '/v1/tasks/run', { json, apiKey: null });
              expectRefusal('auth-none', r, 401, 'missing_api_key');
            } else if (which === 1) {
              const r = await call('POST', '/v1/tasks/run', { json, apiKey: 'sk-soak-wrong-0000' });
              expectRefusal('auth-unknown', r, 401, 'invalid_api_key');
            } else if (which === 2) {
              const r = await call('POST', '/v1/tasks/unload_all_models', { apiKey: APP_KEY });
              expectRefusal('auth-scope', r, 403, 'insufficient_scope');
            } else {
              check('auth-inference-key', await call('POST', '/v1/tasks/run', { json, apiKey: APP_KEY }), {
                model,
              });
            }
          },
        ],
      ]
    : []),
  [
    1,
    'idle',
    async () => {
      // A client that goes quiet long enough for idle retirement to act on the models it used.
      await sleep(1600);
    },
  ],
];

// --- realtime sessions (/v1/realtime) -------------------------------------------------------------
const STATUS_OF_TYPE = {
  server_busy: 503,
  timeout_error: 504,
  server_error: 500,
  invalid_request_error: 400,
};

/**
 * One WebSocket exchange on `path`: `onOpen(ws, end)`, `onMessage(message, ws, end)` and
 * `onAudio(bytes, ws, end)` (binary messages) drive it, `onClose(end, code, reason)` says what a
 * close means, and `end(outcome)` finishes it. A refused upgrade ends it with the HTTP answer, a socket error or
 * a close nobody asked for as `neterr`, and REQUEST_DEADLINE_MS without an end as a hang. Resolves
 * with what check() reads: a status, a body, the time taken.
 */
function wsExchange(path, what, { onOpen = () => undefined, onMessage, onClose, onAudio }) {
  const started = performance.now();
  return new Promise((resolve) => {
    const ws = new WebSocket(`${BASE.replace(/^http/, 'ws')}${path}`, {
      ca: CA,
      headers: SECURE ? { Authorization: `Bearer ${ADMIN_KEY}` } : {},
    });
    let outcome;
    const end = (r) => {
      if (outcome) return;
      outcome = { ms: performance.now() - started, ...r };
      clearTimeout(deadline);
      ws.terminate();
      resolve(outcome);
    };
    const deadline = setTimeout(() => end({ status: 'hang' }), REQUEST_DEADLINE_MS);
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () => end({ status: res.statusCode, body }));
    });
    ws.on('open', () => onOpen(ws, end));
    ws.on('error', (err) => end({ status: 'neterr', error: err.message }));
    // A client that closes on purpose says what its close means (onClose); any other is a fault.
    ws.on('close', (code, reason) =>
      (onClose ?? (() => end({ status: 'neterr', error: `the ${what} closed unasked` })))(
        end,
        code,
        reason.toString(),
      ),
    );
    // Binary messages are audio (Deepgram's speak socket); the other protocols send JSON text only.
    ws.on('message', (data, binary) =>
      binary ? onAudio?.(data, ws, end) : onMessage(JSON.parse(data.toString()), ws, end),
    );
  });
}

/**
 * One realtime session: opened on `model`, `turns` committed buffers of 16 kHz PCM, each answered
 * by completed (200) or failed (the error's status); `leaveAfterMs` leaves mid-turn instead (an
 * abort). With `vad` the server commits: server VAD with a 500 ms idle timeout, each turn 700 ms
 * of silence that the silero model probes, committed by `timeout_triggered`. Resolves with what
 * check() reads: a status, the error as the body, the time taken.
 */
function realtimeSession(model, turns, leaveAfterMs, vad = false) {
  let left = turns;
  const turn = (ws, end) => {
    if (vad) {
      const silence = Buffer.alloc(3200).toString('base64');
      for (let i = 0; i < 7; i++)
        ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: silence }));
    } else {
      ws.send(
        JSON.stringify({ type: 'input_audio_buffer.append', audio: pcm(int(50, 400)).toString('base64') }),
      );
      ws.send(JSON.stringify({ type: 'input_audio_buffer.commit' }));
    }
    if (leaveAfterMs !== undefined) setTimeout(() => end({ status: 'aborted' }), leaveAfterMs);
  };
  return wsExchange(`/v1/realtime?model=${model}`, 'session', {
    onMessage: (e, ws, end) => {
      if (e.type === 'session.created') {
        ws.send(
          JSON.stringify({
            type: 'session.update',
            session: {
              audio: {
                input: {
                  format: { type: 'audio/pcm', rate: 16000 },
                  turn_detection: vad ? { type: 'server_vad', idle_timeout_ms: 500 } : null,
                },
              },
            },
          }),
        );
      } else if (e.type === 'session.updated') turn(ws, end);
      // An error event of a server VAD probe (a busy or full VAD model) is the status its type has.
      else if (e.type === 'error')
        end({ status: STATUS_OF_TYPE[e.error.type] ?? 400, body: JSON.stringify({ error: e.error }) });
      else if (e.type === 'conversation.item.input_audio_transcription.failed') {
        end({ status: STATUS_OF_TYPE[e.error.type] ?? 500, body: JSON.stringify({ error: e.error }) });
      } else if (e.type === 'conversation.item.input_audio_transcription.completed') {
        if (--left > 0) turn(ws, end);
        else end({ status: 200, body: '' });
      }
    },
  });
}

OPS.push(
  [
    3,
    'realtime',
    async () => {
      const model = pick(['asr-s', WD]);
      check('realtime', await realtimeSession(model, int(1, 3)), { model, overrun: model === WD });
    },
  ],
  [
    2,
    'realtime-vad',
    async () => {
      const model = pick(['asr-s', WD]);
      check('realtime-vad', await realtimeSession(model, int(1, 2), undefined, true), {
        model,
        overrun: model === WD,
      });
    },
  ],
  [
    2,
    'realtime-leave',
    async () => {
      const model = pick(['asr-s', WD]);
      const r = await realtimeSession(model, 1, int(0, 60));
      // A turn can finish before its client leaves: then the session ended as it would have.
      check('realtime-leave', r, { model, expectAbort: true, overrun: model === WD });
    },
  ],
);
// --- audio.cpp's WebSocket bridge (frontend_listener "websocket") -----------------------------------
/**
 * One bridge socket on /v1/audio/speech: `requests` speech requests to `model`, one text frame each,
 * answered by response frames (their status and body are what check() reads); `leaveAfterMs` closes
 * the socket mid-request instead (an abort).
 */
function bridgeSocket(model, requests, leaveAfterMs) {
  let left = requests;
  const send = (ws, end) => {
    ws.send(JSON.stringify({ id: left, body_json: { model, input: 'soak bridge', response_format: 'wav' } }));
    if (leaveAfterMs !== undefined) setTimeout(() => end({ status: 'aborted' }), leaveAfterMs);
  };
  return wsExchange('/v1/audio/speech', 'bridge', {
    onOpen: send,
    onMessage: (frame, ws, end) => {
      if (frame.type !== 'response') return;
      if (frame.status !== 200) {
        const body =
          frame.body_encoding === 'base64' ? Buffer.from(frame.body, 'base64').toString() : frame.body;
        end({ status: frame.status, body });
      } else if (--left > 0) send(ws, end);
      else end({ status: 200, body: '' });
    },
  });
}

OPS.push(
  [
    2,
    'bridge',
    async () => {
      check('bridge', await bridgeSocket('tone-a', int(1, 3)), { model: 'tone-a' });
    },
  ],
  [
    1,
    'bridge-leave',
    async () => {
      check('bridge-leave', await bridgeSocket('tone-a', 1, int(0, 40)), {
        model: 'tone-a',
        expectAbort: true,
      });
    },
  ],
);
// --- Wyoming (wyoming_port) -------------------------------------------------------------------------
let WYOMING_PORT = 0;

/**
 * One Wyoming exchange on a fresh connection: a synthesis on the fixture TTS, a transcription of
 * 16 kHz PCM on `asr-s`/`wd-asr`, or voice activity on silero (then a ping), answered by its
 * audio-stop, transcript or pong (200) or by an `error`
 * event (the status of its code); `leaveAfterMs` closes the connection mid-exchange (an abort).
 */
function wyomingExchange(kind, model, leaveAfterMs) {
  const started = performance.now();
  return new Promise((resolve) => {
    const socket = tcpConnect(WYOMING_PORT, '127.0.0.1');
    let outcome;
    const end = (r) => {
      if (outcome) return;
      outcome = { ms: performance.now() - started, ...r };
      clearTimeout(deadline);
      socket.destroy();
      resolve(outcome);
    };
    const deadline = setTimeout(() => end({ status: 'hang' }), REQUEST_DEADLINE_MS);
    socket.on('error', (err) => end({ status: 'neterr', error: err.message }));
    socket.on('close', () => end({ status: 'neterr', error: 'the Wyoming connection closed unasked' }));
    socket.on('connect', () => {
      if (kind === 'tts')
        socket.write(wyomingFrame('synthesize', { text: 'soak over wyoming', voice: { name: model } }));
      else {
        const format = { rate: 16000, width: 2, channels: 1 };
        socket.write(
          Buffer.concat([
            wyomingFrame('transcribe', { name: model }),
            wyomingFrame('audio-start', format),
            wyomingFrame('audio-chunk', format, pcm(int(50, 400))),
            wyomingFrame('audio-stop'),
            // Voice activity has no last event of its own: the pong after it is the end.
            ...(kind === 'vad' ? [wyomingFrame('ping')] : []),
          ]),
        );
      }
      if (leaveAfterMs !== undefined) setTimeout(() => end({ status: 'aborted' }), leaveAfterMs);
    });
    readWyoming(socket, (type, data) => {
      if (type === 'error') end(wyomingError(data));
      else if (type === { tts: 'audio-stop', asr: 'transcript', vad: 'pong' }[kind])
        end({ status: 200, body: '' });
    });
  });
}

/** Calls `onEvent(type, data)` for each Wyoming event `socket` receives. */
function readWyoming(socket, onEvent) {
  let buffer = Buffer.alloc(0);
  socket.on('data', (chunk) => {
    buffer = Buffer.concat([buffer, chunk]);
    for (;;) {
      const newline = buffer.indexOf(0x0a);
      if (newline < 0) return;
      const header = JSON.parse(buffer.subarray(0, newline).toString());
      const size = newline + 1 + (header.data_length ?? 0) + (header.payload_length ?? 0);
      if (buffer.length < size) return;
      const data = header.data_length
        ? JSON.parse(buffer.subarray(newline + 1, newline + 1 + header.data_length).toString())
        : {};
      buffer = buffer.subarray(size);
      onEvent(header.type, data);
    }
  });
}

/** A Wyoming error event as what check() reads: the status its code stands for. */
const wyomingError = (data) => ({
  status: WYOMING_STATUS[data.code] ?? 500,
  body: JSON.stringify({ error: { message: data.text, code: data.code, type: 'wyoming' } }),
});

/** The HTTP status each Wyoming error code stands for, for check(). */
const WYOMING_STATUS = {
  server_busy: 503,
  residency_full: 503,
  model_loading: 503,
  shutting_down: 503,
  inference_timeout: 504,
  engine_error: 500,
};

OPS.push(
  [
    2,
    'wyoming',
    async () => {
      const kind = pick(['tts', 'asr', 'vad']);
      const model = { tts: 'tone-a', asr: pick(['asr-s', WD]), vad: 'silero-vad' }[kind];
      check('wyoming', await wyomingExchange(kind, model), { model, overrun: model === WD });
    },
  ],
  [
    1,
    'wyoming-leave',
    async () => {
      const model = pick(['asr-s', WD]);
      check('wyoming-leave', await wyomingExchange('asr', model, int(0, 40)), {
        model,
        expectAbort: true,
        overrun: model === WD,
      });
    },
  ],
);
// --- Deepgram's streaming speech (/v1/speak) --------------------------------------------------------
const SPEAK_WORDS = 'Please call me tomorrow morning, the weather is nice today.'.split(' ');

/**
 * The status a speak session's last Warning (`SESSION_ENDING`, before a 1011 close) stands for, for
 * check(). The Warning carries the error's message only (Deepgram's shape has no code for it), so
 * the kind is read from the message: a busy, full or closing server is 503, anything else 500.
 */
function speakWarning(warning) {
  const busy = /busy|max_loaded_models|queue|shutting down|restarted/.exec(warning.description);
  const code = busy
    ? ({ busy: 'server_busy', max_loaded_models: 'residency_full', queue: 'queue_full' }[busy[0]] ??
      'shutting_down')
    : 'engine_error';
  return {
    status: busy ? 503 : 500,
    body: JSON.stringify({ error: { message: warning.description, code, type: 'deepgram' } }),
  };
}

/**
 * One `/v1/speak` session on `model`: `rounds` sentences sent a word at a time at a language model's
 * pace (0-15 ms apart, some words in halves), each followed by Flush and answered by audio, then
 * Flushed; then Close, answered by the server's close (200). `clear`: a Clear on the first audio
 * instead (a barge-in), answered by Cleared (200). `leaveAfterMs`: the client drops the socket
 * mid-sentence (an abort). A Warning that ends the session is the status of its error.
 */
function speakSession(model, { rounds = 1, clear = false, leaveAfterMs } = {}) {
  let left = rounds;
  let closing = false;
  let clearSent = false;
  const sentence = async (ws, end) => {
    for (const word of SPEAK_WORDS) {
      const pieces = rand() < 0.2 && word.length > 4 ? [word.slice(0, 2), `${word.slice(2)} `] : [`${word} `];
      for (const text of pieces) {
        if (ws.readyState !== WebSocket.OPEN) return;
        ws.send(JSON.stringify({ type: 'Speak', text }));
        const gap = int(0, 15);
        if (gap > 0) await sleep(gap);
      }
    }
    if (ws.readyState === WebSocket.OPEN) ws.send('{"type":"Flush"}');
    if (leaveAfterMs !== undefined) setTimeout(() => end({ status: 'aborted' }), leaveAfterMs);
  };
  return wsExchange(`/v1/speak?model=${model}&encoding=linear16&sample_rate=16000`, 'speak session', {
    onMessage: (m, ws, end) => {
      if (m.type === 'Metadata') sentence(ws, end);
      else if (m.type === 'Flushed' && !clear) {
        if (--left > 0) sentence(ws, end);
        else {
          closing = true;
          ws.send('{"type":"Close"}');
        }
      } else if (m.type === 'Cleared') {
        closing = true;
        ws.send('{"type":"Close"}');
      } else if (m.type === 'Warning' && m.code === 'SESSION_ENDING') end(speakWarning(m));
      else if (m.type === 'Warning') end({ status: 400, body: JSON.stringify({ error: m }) });
    },
    onAudio: (_bytes, ws) => {
      if (clear && !clearSent && ws.readyState === WebSocket.OPEN) {
        clearSent = true;
        ws.send('{"type":"Clear"}');
      }
    },
    // The close that answers the client's Close ends the exchange.
    onClose: (end) =>
      end(
        closing ? { status: 200, body: '' } : { status: 'neterr', error: 'the speak session closed unasked' },
      ),
  });
}

OPS.push(
  [
    2,
    'deepgram-speak',
    async () => {
      const model = pick(['tone-a', 'tone-a', 'flite']);
      check('deepgram-speak', await speakSession(model, { rounds: int(1, 3) }), { model });
    },
  ],
  [
    1,
    'deepgram-speak-clear',
    async () => {
      const model = pick(['tone-a', 'flite']);
      check('deepgram-speak-clear', await speakSession(model, { clear: true }), { model });
    },
  ],
  [
    1,
    'deepgram-speak-leave',
    async () => {
      const model = pick(['tone-a', 'flite']);
      check('deepgram-speak-leave', await speakSession(model, { leaveAfterMs: int(0, 80) }), {
        model,
        expectAbort: true,
      });
    },
  ],
);
// --- leaving mid-turn on every protocol (issue 38) -------------------------------------------------
/**
 * flite's speech, 16 kHz mono PCM16, made through voxd's own speech route once it listens: what the
 * live turns below speak, since only speech opens a turn under server VAD.
 */
let SPEECH;
const SPEECH_TEXT = 'Please call me tomorrow morning. The weather is nice today.';
async function makeSpeech() {
  const r = await call('POST', '/v1/audio/speech', {
    json: { model: 'flite', input: SPEECH_TEXT, voice: 'slt', response_format: 'pcm', sample_rate: 16000 },
    binary: true,
  });
  if (r.status !== 200) throw new Error(`flite speech for the live ops: ${r.status} ${r.body}`);
  return r.body;
}
/** `ms` of the speech from `fromMs` on, wrapping round (16 kHz PCM16: 32 bytes a millisecond). */
function speech(fromMs, ms) {
  const out = Buffer.alloc(Math.round(ms * 32) & ~1);
  for (let at = 0, from = Math.round(fromMs * 32) & ~1; at < out.length; ) {
    from %= SPEECH.length;
    const n = Math.min(out.length - at, SPEECH.length - from);
    SPEECH.copy(out, at, from, from + n);
    at += n;
    from += n;
  }
  return out;
}
/**
 * Sends `ms` of speech at real pace in 100 ms pieces through `send(pcm)`, as a microphone does:
 * by the wall clock, so a loaded machine sends what fell due at once. Stops early when `gone()`.
 */
async function speakAtPace(ms, send, gone) {
  const start = performance.now();
  const from = int(0, 3000);
  for (let sent = 0; sent < ms && !gone(); ) {
    const due = Math.min(ms, performance.now() - start + 100);
    for (; sent < due; sent += 100) send(speech(from + sent, Math.min(100, ms - sent)));
    await sleep(100);
  }
}

/**
 * The longest a live op speaks waiting for its turn to be heard live: idle retirement (1.2 s)
 * leaves pocketsphinx and silero cold for most ops, and each load takes 1-3 s on a loaded machine.
 */
const LIVE_WAIT_MS = 8000;
/** Per live op: [left while the engine was hearing the turn, left before it was]. */
const leftLive = new Map();
function countLeave(kind, live) {
  const counts = leftLive.get(kind) ?? [0, 0];
  counts[live ? 0 : 1]++;
  leftLive.set(kind, counts);
}
/**
 * Whether a live op has spoken long enough: `extraMs` after the engine was first heard on the turn
 * (`liveAt()`, when its first words came back), or LIVE_WAIT_MS in all. The leave then lands while
 * the turn holds its slot and waits for more audio, where a leave was lost (probe F1, F2), rather
 * than in a cold model's load, where it always was handled.
 */
function spokenEnough(startedAt, liveAt, extraMs) {
  const now = performance.now();
  return now - startedAt >= LIVE_WAIT_MS || (liveAt() !== undefined && now - liveAt() >= extraMs);
}

/**
 * A realtime live turn whose client leaves mid-speech (the Live tab's Stop): server VAD on
 * pocketsphinx, speech at pace (the turn opens at its start and holds the slot) until 0-500 ms
 * after its first words came back, then the client closes, terminates, or clears the buffer and
 * closes once that is answered. What it leaves must end: the phase checks see every slot free
 * again (probe F1). Resolves with what check() reads; an error event or a failed turn before the
 * leave is its status.
 */
function realtimeLiveLeave(how) {
  const kind = `realtime-live-${how}`;
  let leaving = false;
  let ended = false;
  let liveAt;
  const extraMs = int(0, 500);
  const leave = (ws, end) => {
    leaving = true;
    countLeave(kind, liveAt !== undefined);
    if (how === 'terminate') end({ status: 'aborted' });
    else if (how === 'close') ws.close(1000);
    else ws.send(JSON.stringify({ type: 'input_audio_buffer.clear' }));
  };
  const speak = (ws, end) => {
    const startedAt = performance.now();
    const append = (pcm) =>
      ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: pcm.toString('base64') }));
    speakAtPace(LIVE_WAIT_MS, append, () => ended || spokenEnough(startedAt, () => liveAt, extraMs)).then(
      () => ended || leave(ws, end),
    );
  };
  return wsExchange('/v1/realtime?model=pocketsphinx', 'session', {
    onMessage: (e, ws, end) => {
      if (e.type === 'session.created')
        ws.send(
          JSON.stringify({
            type: 'session.update',
            session: {
              audio: {
                input: { format: { type: 'audio/pcm', rate: 16000 }, turn_detection: { type: 'server_vad' } },
              },
            },
          }),
        );
      else if (e.type === 'session.updated') speak(ws, end);
      else if (e.type === 'conversation.item.input_audio_transcription.delta') liveAt ??= performance.now();
      else if (e.type === 'input_audio_buffer.cleared' && how === 'clear') ws.close(1000);
      else if (e.type === 'error' && !leaving)
        end({ status: STATUS_OF_TYPE[e.error.type] ?? 400, body: JSON.stringify({ error: e.error }) });
      else if (e.type === 'conversation.item.input_audio_transcription.failed' && !leaving)
        end({ status: STATUS_OF_TYPE[e.error.type] ?? 500, body: JSON.stringify({ error: e.error }) });
    },
    // The close the client began is answered: the session is over on both sides.
    onClose: (end) => {
      ended = true;
      end(leaving ? { status: 'aborted' } : { status: 'neterr', error: 'the session closed unasked' });
    },
  }).then((r) => {
    ended = true;
    return r;
  });
}

/**
 * A Wyoming transcription on pocketsphinx at speaking pace (it goes live after its first second)
 * until 0-500 ms after its first transcript-chunk, whose client then leaves mid-utterance, or sends
 * a second audio-start (a new utterance without audio-stop) and leaves after 300 ms more, or ends
 * it with audio-stop and waits for its transcript (the path that works, 200). The phase checks see
 * the slot free (probe F2).
 */
function wyomingLiveLeave(how) {
  const started = performance.now();
  const format = { rate: 16000, width: 2, channels: 1 };
  return new Promise((resolve) => {
    const socket = tcpConnect(WYOMING_PORT, '127.0.0.1');
    let outcome;
    const end = (r) => {
      if (outcome) return;
      outcome = { ms: performance.now() - started, ...r };
      clearTimeout(deadline);
      socket.destroy();
      resolve(outcome);
    };
    const deadline = setTimeout(() => end({ status: 'hang' }), REQUEST_DEADLINE_MS);
    socket.on('error', (err) => end({ status: 'neterr', error: err.message }));
    socket.on('close', () => end({ status: 'neterr', error: 'the Wyoming connection closed unasked' }));
    // A refusal of the second audio-start (rather than the first utterance dropped unanswered) is
    // the client's own doing, as its leave is; a busy, timed-out or failed engine is not.
    let second = false;
    let liveAt;
    readWyoming(socket, (type, data) => {
      const refused = second && !(data.code in WYOMING_STATUS) && data.code !== 'internal_error';
      if (type === 'error') end(refused ? { status: 'aborted' } : wyomingError(data));
      else if (type === 'transcript') end({ status: 200, body: '' });
      else if (type === 'transcript-chunk') liveAt ??= performance.now();
    });
    socket.on('connect', async () => {
      socket.write(
        Buffer.concat([
          wyomingFrame('transcribe', { name: 'pocketsphinx' }),
          wyomingFrame('audio-start', format),
        ]),
      );
      const gone = () => outcome !== undefined;
      const chunk = (pcm) => socket.write(wyomingFrame('audio-chunk', format, pcm));
      const startedAt = performance.now();
      const extraMs = int(0, 500);
      await speakAtPace(LIVE_WAIT_MS, chunk, () => gone() || spokenEnough(startedAt, () => liveAt, extraMs));
      if (gone()) return;
      countLeave(`wyoming-live-${how}`, liveAt !== undefined);
      if (how === 'again') {
        second = true;
        socket.write(wyomingFrame('audio-start', format));
        await speakAtPace(300, chunk, gone);
      }
      if (how === 'stop') {
        if (!gone()) socket.write(wyomingFrame('audio-stop'));
      } else end({ status: 'aborted' });
    });
  });
}

/**
 * A bridge socket on /v1/audio/speech whose client leaves with a request running and frames
 * waiting behind it: a flite request of 5-10 sentences (streamed or whole), then 1-3 frames for
 * tone-a, then a close or a drop 100-600 ms later. Answers that came before the leave are checked
 * like HTTP answers; the phase checks see both models' slots free again.
 */
function bridgeLeaveWaiting() {
  const stream = rand() < 0.5;
  const waiting = int(1, 3);
  const holdMs = int(100, 600);
  const close = rand() < 0.5;
  let leaving = false;
  return wsExchange('/v1/audio/speech', 'bridge', {
    onOpen: (ws, end) => {
      const input = `${SPEECH_TEXT} `.repeat(int(5, 10));
      ws.send(
        JSON.stringify({ id: 'slow', body_json: { model: 'flite', input, response_format: 'pcm', stream } }),
      );
      for (let i = 0; i < waiting; i++)
        ws.send(
          JSON.stringify({
            id: `waiting-${i}`,
            body_json: { model: 'tone-a', input: 'soak', response_format: 'wav' },
          }),
        );
      setTimeout(() => {
        leaving = true;
        if (close) ws.close(1000);
        else end({ status: 'aborted' });
      }, holdMs);
    },
    onMessage: (frame, _ws, end) => {
      const status = frame.type === 'response' || frame.type === 'response.start' ? frame.status : undefined;
      if (status !== undefined && status !== 200 && !leaving) {
        const body =
          frame.body_encoding === 'base64' ? Buffer.from(frame.body ?? '', 'base64').toString() : frame.body;
        end({ status, body });
      }
    },
    onClose: (end) =>
      end(leaving ? { status: 'aborted' } : { status: 'neterr', error: 'the bridge closed unasked' }),
  });
}

OPS.push(
  [
    1,
    'realtime-live-leave',
    async () => {
      const how = pick(['close', 'terminate', 'clear']);
      check(`realtime-live-${how}`, await realtimeLiveLeave(how), {
        model: 'pocketsphinx',
        expectAbort: true,
      });
    },
  ],
  [
    0.75,
    'wyoming-live-leave',
    async () => {
      const how = pick(['leave', 'leave', 'again', 'stop']);
      check(`wyoming-live-${how}`, await wyomingLiveLeave(how), {
        model: 'pocketsphinx',
        expectAbort: how !== 'stop',
      });
    },
  ],
  [
    0.75,
    'bridge-leave-waiting',
    async () => {
      check('bridge-leave-waiting', await bridgeLeaveWaiting(), { model: 'flite', expectAbort: true });
    },
  ],
);
// --- Deepgram's live transcription (/v1/listen) -----------------------------------------------------
/**
 * What a `/v1/listen` close stands for, for check(): 1000/1001 after Metadata is the stream's end
 * (200); 1008 `DATA-0000` a refused input (400); 1011 `NET-0000 <message>` the error the message
 * tells (Deepgram's close carries no code: a busy, full or closing server is 503, anything else
 * 500); the idle timeout `NET-0001` cannot happen to a client that is sending (a violation).
 */
function listenClose(code, reason, metadata) {
  if ((code === 1000 || code === 1001) && metadata) return { status: 200, body: '' };
  const error = (status, apiCode) => ({
    status,
    body: JSON.stringify({ error: { message: reason, code: apiCode, type: 'deepgram' } }),
  });
  if (code === 1008) return error(400, 'invalid_request');
  if (code === 1011 && reason.startsWith('NET-0000')) {
    const warning = speakWarning({ description: reason });
    return { ...warning };
  }
  return { status: 'neterr', error: `the listen session closed ${code} ${reason}` };
}

/**
 * One `/v1/listen` session on `model` (16 kHz linear16): 300 ms of silence, 1.5 s of flite's speech
 * and 1 s of silence at once (silero finds the utterance), then CloseStream, answered by the final
 * Results, Metadata and a 1000 close (200); `finalize`: a Finalize first, and CloseStream once its
 * final Results came.
 */
function listenSession(model, { finalize = false } = {}) {
  let metadata = false;
  let closing = false;
  const closeStream = (ws) => {
    closing = true;
    if (ws.readyState === WebSocket.OPEN) ws.send('{"type":"CloseStream"}');
  };
  return wsExchange(
    `/v1/listen?model=${model}&encoding=linear16&sample_rate=16000&endpointing=300`,
    'listen session',
    {
      onOpen: (ws) => {
        const from = int(0, 3000);
        ws.send(Buffer.concat([Buffer.alloc(300 * 32), speech(from, 1500), Buffer.alloc(1000 * 32)]));
        if (finalize) ws.send('{"type":"Finalize"}');
        else closeStream(ws);
      },
      onMessage: (m, ws) => {
        if (m.type === 'Metadata') metadata = true;
        else if (m.type === 'Results' && m.is_final && finalize && !closing) closeStream(ws);
      },
      onClose: (end, code, reason) =>
        end(
          closing || code !== 1000
            ? listenClose(code, reason, metadata)
            : { status: 'neterr', error: 'the listen session closed unasked' },
        ),
    },
  );
}

/**
 * A `/v1/listen` utterance on `pocketsphinx` (heard live) whose client leaves mid-speech: speech at
 * real pace until 0-500 ms after its first interim Results (the engine is hearing it and holds its
 * slot; at most LIVE_WAIT_MS), then a terminate, a close, or CloseStream (answered by the final,
 * Metadata and 1000). The phase checks see the slot free again.
 */
function listenLiveLeave(how) {
  const kind = `deepgram-listen-live-${how}`;
  let leaving = false;
  let ended = false;
  let metadata = false;
  let liveAt;
  const extraMs = int(0, 500);
  return wsExchange(
    '/v1/listen?model=pocketsphinx&encoding=linear16&sample_rate=16000&interim_results=true',
    'listen session',
    {
      onOpen: (ws, end) => {
        const startedAt = performance.now();
        const send = (pcm) => ws.readyState === WebSocket.OPEN && ws.send(pcm);
        speakAtPace(LIVE_WAIT_MS, send, () => ended || spokenEnough(startedAt, () => liveAt, extraMs)).then(
          () => {
            if (ended) return;
            leaving = true;
            countLeave(kind, liveAt !== undefined);
            if (how === 'terminate') end({ status: 'aborted' });
            else if (how === 'close') ws.close(1000);
            else ws.send('{"type":"CloseStream"}');
          },
        );
      },
      onMessage: (m) => {
        if (m.type === 'Results' && !m.is_final) liveAt ??= performance.now();
        if (m.type === 'Metadata') metadata = true;
      },
      onClose: (end, code, reason) => {
        ended = true;
        end(
          leaving
            ? how === 'closestream'
              ? listenClose(code, reason, metadata)
              : { status: 'aborted' }
            : listenClose(code, reason, false),
        );
      },
    },
  ).then((r) => {
    ended = true;
    return r;
  });
}

OPS.push(
  [
    2,
    'deepgram-listen',
    async () => {
      const finalize = rand() < 0.5;
      check(
        finalize ? 'deepgram-listen-finalize' : 'deepgram-listen',
        await listenSession('asr-s', { finalize }),
        {
          model: 'asr-s',
        },
      );
    },
  ],
  [
    0.75,
    'deepgram-listen-live-leave',
    async () => {
      const how = pick(['close', 'terminate', 'closestream']);
      check(`deepgram-listen-live-${how}`, await listenLiveLeave(how), {
        model: 'pocketsphinx',
        expectAbort: how !== 'closestream',
      });
    },
  ],
);
const TOTAL = OPS.reduce((s, [w]) => s + w, 0);
function nextOp() {
  let x = rand() * TOTAL;
  for (const op of OPS) {
    x -= op[0];
    if (x <= 0) return op;
  }
  return OPS[0];
}

/** Every model back to no admitted and no queued requests, within a deadline. */
async function settled(label) {
  const end = Date.now() + 15_000;
  let last;
  while (Date.now() < end) {
    const list = await getJson('/v1/models');
    last = list?.data?.filter((m) => m.active_slots !== 0 || m.queued_requests !== 0) ?? ['no /v1/models'];
    if (last.length === 0) return;
    await sleep(100);
  }
  violation(`${label}: models still busy 15 s after the clients stopped: ${JSON.stringify(last)}`);
}

async function chaos(ms) {
  const end = performance.now() + ms;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (performance.now() < end) {
        const [, , fn] = nextOp();
        try {
          await fn();
        } catch (err) {
          violation(`client error: ${err?.stack ?? err}`);
        }
      }
    }),
  );
}

function pct(xs, p) {
  if (xs.length === 0) return '-';
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))].toFixed(0);
}

// --- the run --------------------------------------------------------------------------------------
const started = performance.now();
let baseline;
let end;
let exit;
/** voxd's CPU seconds over the chaos phases (its runners' included), and their wall seconds. */
let chaosLoad;
let shutdownMs;
try {
  BASE = await listening();
  // Printed right after the HTTP line.
  for (let i = 0; i < 500 && !WYOMING_PORT; i++) {
    WYOMING_PORT = Number(stderr.match(/voxd wyoming on tcp:\/\/127\.0\.0\.1:(\d+)/)?.[1] ?? 0);
    if (!WYOMING_PORT) await sleep(10);
  }
  if (!WYOMING_PORT) throw new Error(`voxd printed no Wyoming port\n${stderr}`);
  // Runners come and go within a phase: a sweep every second keeps the list of pids to account for.
  setInterval(descendants, 1000).unref();
  console.log(`soak: seed ${SEED}, ${SECONDS} s, ${CLIENTS} clients, voxd pid ${child.pid} at ${BASE}`);

  SPEECH = await makeSpeech();
  const spoken = Buffer.concat([wavHeader(16000, 1, SPEECH.length), SPEECH]).toString('base64');
  // Warm-up: every model loaded and used, every code path's lazy parts (worker threads, runners,
  // module caches) paid for, so the baseline is what a running server holds.
  for (let round = 0; round < 2; round++) {
    for (const id of Object.keys(MODELS)) {
      // The fixtures and flite take text; silero and pocketsphinx take audio.
      const json =
        MODELS[id].family === 'silero_vad'
          ? { audio_base64: wav(300).toString('base64') }
          : MODELS[id].family === 'pocketsphinx_asr'
            ? { audio_base64: spoken }
            : { text: 'warm' };
      const r = await call('POST', '/v1/tasks/run', { json: { model: id, ...json } });
      check('warmup', r, { model: id });
    }
    await chaos(3000);
    await settled('warm-up');
  }
  check('unload-all', await call('POST', '/v1/tasks/unload_all_models'));
  await settled('warm-up');
  baseline = await quietSample();
  console.log(
    `baseline after warm-up: ${baseline.fd} fds, RSS ${baseline.rss.toFixed(1)} MiB (native ${baseline.native.toFixed(1)}: in use ${baseline.inUse.toFixed(1)}, allocator free ${baseline.free.toFixed(1)}; JS data ${baseline.heap.toFixed(1)} and code ${baseline.code.toFixed(1)} of ${baseline.committed.toFixed(1)} committed)`,
  );

  leaking = true;
  const chaosCpu = cpuSeconds();
  const chaosStart = performance.now();
  // Phases of chaos, each followed by a check that the server came back to idle: every model's
  // active_slots and queued_requests 0 again (a turn its client left mid-speech included).
  const PHASE_MS = 15_000;
  for (let left = SECONDS * 1000, phase = 1; left > 0; left -= PHASE_MS, phase++) {
    await chaos(Math.min(PHASE_MS, left));
    await settled(`after phase ${phase}`);
    const list = await getJson('/v1/models');
    console.log(
      `phase ${phase}: ${requests} requests so far; loaded: ${
        list.data
          .filter((m) => m.loaded)
          .map((m) => m.id)
          .join(',') || 'none'
      }; children ${descendants().length}; ${await memoryLine()}`,
    );
  }
  chaosLoad = { cpu: cpuSeconds() - chaosCpu, wall: (performance.now() - chaosStart) / 1000 };

  // Quiet: everything unloaded, no runner left, fds and memory back near the baseline.
  check('unload-all', await call('POST', '/v1/tasks/unload_all_models'));
  await settled('final');
  const limit = {
    // Back to the baseline itself: every connection and session of the chaos is over, so one
    // descriptor more is one something kept (a socket a session shell never closed, probe F3).
    fd: baseline.fd,
    // The issue's own measure, resident memory back within 10 %, for what is outside the JS heap;
    // the allocator's kept free blocks (a few MiB after a burst) make a tighter bound a coin toss.
    // Leaks are caught more finely by the two checks after it.
    native: baseline.native + 0.1 * baseline.rss,
    inUse: bound(baseline.inUse),
    heap: bound(baseline.heap),
  };
  end = await quietSample(limit);
  if (end.children.length > 0) violation(`runner processes outlive their models: ${end.children.join(',')}`);
  if (end.fd > limit.fd) violation(`fds ${baseline.fd} -> ${end.fd} (not back to the baseline)`);
  const mib = (x) => `${x.toFixed(1)} MiB`;
  if (end.native > limit.native)
    violation(`native memory ${mib(baseline.native)} -> ${mib(end.native)} (over +10 % of RSS)`);
  // Not a silent pass where the gauge is missing (no glibc): the check could not be made.
  if (!Number.isFinite(end.inUse)) violation('voxd_malloc_in_use_bytes is not in /metrics (glibc only)');
  else if (end.inUse > limit.inUse)
    violation(`native memory in use ${mib(baseline.inUse)} -> ${mib(end.inUse)} (over +10 %, or +2 MiB)`);
  if (end.heap > limit.heap)
    violation(`JS heap data ${mib(baseline.heap)} -> ${mib(end.heap)} (over +10 %, or +2 MiB)`);

  // Shutdown: with a request in flight, SIGTERM exits 0 within shutdown_timeout_ms plus a margin.
  const inFlight = call('POST', '/v1/tasks/run', {
    json: { model: 'tone-a', text: 'last', options: { run_ms: 200 } },
  });
  await sleep(50);
  const t0 = performance.now();
  child.kill('SIGTERM');
  exit = await Promise.race([closed, sleep(SHUTDOWN_TIMEOUT_MS + 5000).then(() => null)]);
  shutdownMs = performance.now() - t0;
  check('shutdown-inflight', await inFlight, { model: 'tone-a' });
  if (!exit) violation(`voxd still running ${SHUTDOWN_TIMEOUT_MS + 5000} ms after SIGTERM`);
  else if (exit.code !== 0) violation(`voxd exited ${JSON.stringify(exit)} after SIGTERM`);
  const orphans = [...runners].filter(alive);
  if (orphans.length > 0) {
    violation(`runner processes left after voxd exited: ${orphans.join(',')}`);
    killAll('SIGKILL');
  }
} catch (err) {
  violation(`soak aborted: ${err?.stack ?? err}`);
} finally {
  if (exited === null) {
    killAll('SIGKILL');
    await Promise.race([closed, sleep(5000)]);
  }
  rmSync(dir, { recursive: true, force: true });
}

// --- the report -----------------------------------------------------------------------------------
const wall = (performance.now() - started) / 1000;
console.log(
  `\n${'kind'.padEnd(22)} ${'n'.padStart(6)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)}  statuses`,
);
for (const [kind, m] of [...stats].sort()) {
  const n = [...m.values()].reduce((a, b) => a + b, 0);
  const st = [...m]
    .sort()
    .map(([s, c]) => `${s}:${c}`)
    .join(' ');
  const lat = latencies.get(kind) ?? [];
  console.log(
    `${kind.padEnd(22)} ${String(n).padStart(6)} ${pct(lat, 50).padStart(7)} ${pct(lat, 99).padStart(7)}  ${st}`,
  );
}
if (leftLive.size > 0)
  console.log(
    `\nlive ops that left with the engine hearing the turn (the rest left before it was): ${[...leftLive]
      .sort()
      .map(([kind, [live, before]]) => `${kind} ${live}/${live + before}`)
      .join(', ')}`,
  );
console.log(`\nanswers allowed only as a neighbour's fault (500/503/504 within 1.5 s of one): ${excused}`);
console.log(`requests: ${requests} in ${wall.toFixed(1)} s end to end (chaos ${SECONDS} s)`);
if (chaosLoad)
  console.log(
    `voxd CPU over the chaos phases: ${chaosLoad.cpu.toFixed(1)} s in ${chaosLoad.wall.toFixed(1)} s (${(chaosLoad.cpu / chaosLoad.wall).toFixed(2)} cores, runners reaped included)`,
  );
if (baseline && end)
  console.log(
    `fds: ${baseline.fd} -> ${end.fd}; RSS: ${baseline.rss.toFixed(1)} -> ${end.rss.toFixed(1)} MiB, of which native ${baseline.native.toFixed(1)} -> ${end.native.toFixed(1)} MiB (in use ${baseline.inUse.toFixed(1)} -> ${end.inUse.toFixed(1)}, allocator free ${baseline.free.toFixed(1)} -> ${end.free.toFixed(1)}) and JS heap committed ${baseline.committed.toFixed(1)} -> ${end.committed.toFixed(1)} MiB (data ${baseline.heap.toFixed(1)} -> ${end.heap.toFixed(1)}, code ${baseline.code.toFixed(1)} -> ${end.code.toFixed(1)}); runner processes after unload-all: ${end.children.length}`,
  );
if (exit)
  console.log(
    `SIGTERM: exit ${JSON.stringify(exit)} after ${shutdownMs.toFixed(0)} ms (shutdown_timeout_ms ${SHUTDOWN_TIMEOUT_MS})`,
  );
if (violations.length > 0) {
  console.log(`\nFAIL: ${violations.length} violation(s); first: ${violations[0]}`);
  console.log(`replay: ${REPLAY}`);
  console.log(`voxd stderr (tail):\n${stderr.slice(-3000)}`);
  process.exit(1);
}
console.log(`PASS (seed ${SEED})`);
