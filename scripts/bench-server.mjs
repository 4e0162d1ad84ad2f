// What the benchmark scripts share: an in-process voxd with --parallel-jobs for a list of models,
// its config written to a folder of the caller's, and the sentence the engines are measured on.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startVoxd } from '../dist/src/app.js';
import { wavHeader } from '../dist/src/audio/wav-encode.js';
import { loadServerConfig } from '../dist/src/config/server-config.js';
import { createEngineCatalog } from '../dist/src/engines/catalog.js';
import { createLogger } from '../dist/src/observability/logger.js';

const LOAD = fileURLToPath(new URL('./bench-load.mjs', import.meta.url));

export const SENTENCE =
  'The quick brown fox jumps over the lazy dog while seven happy children watch from the old wooden bridge today.';

/** Starts voxd (parallel runtime, no busy timeout) serving `models`; its config goes into `dir`. */
export async function startBenchServer(dir, models) {
  const path = join(dir, `server-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(path, JSON.stringify({ ui: false, busy_timeout_ms: 0, models }));
  const catalog = createEngineCatalog();
  const { config } = loadServerConfig({
    configPath: path,
    overrides: { port: 0, parallel_jobs: true, enable_fixture: true },
    knownFamilies: [...catalog.keys()],
  });
  return startVoxd({ config, catalog, logger: createLogger({ level: 'silent' }).logger });
}

/** What `child` writes to its stdout and stderr, kept as it arrives. */
function outputOf(child) {
  const output = { stdout: '', stderr: '' };
  child.stdout.on('data', (chunk) => {
    output.stdout += chunk;
  });
  child.stderr.on('data', (chunk) => {
    output.stderr += chunk;
  });
  return output;
}

/**
 * Starts `voxd serve --parallel-jobs --enable-fixture` as a child process with `config` (written
 * into a fresh temporary folder, which is removed with the child when this process exits) and
 * waits until it listens. Resolves with its HTTP base URL, its Wyoming port (0 when off), the
 * child, its folder (a file root: the config's), what it wrote to stderr so far (`stderr()`: its
 * log, request lines among them with `log_level: "debug"`) and to stdout (`stdout()`: V8's
 * `--trace-gc` lines when `nodeArgs` asks for them), and `stop()` (SIGKILL, its exit awaited, its
 * folder removed), for the benchmarks that measure voxd as clients see it: over its sockets, in its
 * own process.
 */
export async function startServeChild(config, nodeArgs = []) {
  const main = new URL('../dist/src/cli/main.js', import.meta.url).pathname;
  const dir = mkdtempSync(join(tmpdir(), 'voxd-bench-'));
  const configPath = join(dir, 'server.json');
  writeFileSync(
    configPath,
    JSON.stringify({ host: '127.0.0.1', port: 0, ui: false, busy_timeout_ms: 0, ...config }),
  );
  const child = spawn(
    process.execPath,
    [...nodeArgs, main, 'serve', '--config', configPath, '--parallel-jobs', '--enable-fixture'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its temporary files (its runners' folders among them) go in its folder, which goes at exit
      // even though the server is killed there without its own clean-up.
      env: { ...process.env, VOXD_DATA_DIR: dir, TMPDIR: dir },
    },
  );
  const output = outputOf(child);
  process.once('exit', () => {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  const wantsWyoming = config.wyoming_port !== undefined;
  for (let i = 0; i < 1000; i++) {
    const { stderr } = output;
    const base = stderr.match(/voxd listening on (http:\/\/127\.0\.0\.1:\d+)/)?.[1];
    const wyomingPort = Number(stderr.match(/voxd wyoming on tcp:\/\/127\.0\.0\.1:(\d+)/)?.[1] ?? 0);
    if (base && (!wantsWyoming || wyomingPort))
      return {
        base,
        wyomingPort,
        child,
        dir,
        stderr: () => output.stderr,
        stdout: () => output.stdout,
        async stop() {
          const exited = new Promise((resolve) => child.once('exit', resolve));
          child.kill('SIGKILL');
          if (child.exitCode === null && child.signalCode === null) await exited;
          rmSync(dir, { recursive: true, force: true });
        },
      };
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`voxd did not start:\n${output.stderr}`);
}

/**
 * An engine family called with no server, as voxd runs it: its weights and `count` sessions, each
 * in its own runner process (isolation "session"), for the benchmarks' "engine alone" side.
 * Dispose the sessions, then the weights.
 */
export async function loadAlone(family, modelId, task, count = 1) {
  const spec = {
    modelId,
    path: '',
    task,
    mode: 'offline',
    loadOptions: {},
    backend: 'cpu',
    device: 0,
    threads: 1,
    isolation: 'session',
  };
  const weights = await createEngineCatalog().get(family).load(spec, new AbortController().signal);
  const sessions = [];
  for (let i = 0; i < count; i++)
    sessions.push(await weights.createSession({ index: i, sessionOptions: {} }));
  return { weights, sessions };
}

/**
 * SENTENCE spoken by flite (a voxd child, response_format pcm at `rate`), cut to (or repeated to
 * fill) `seconds`: a mono PCM16 WAV, and how long the speech itself was.
 */
export async function spokenClip(seconds, rate = 16000) {
  const server = await startServeChild({ models: [{ id: 'flite', family: 'flite_tts', task: 'tts' }] });
  try {
    const res = await fetch(`${server.base}/v1/audio/speech`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'flite', input: SENTENCE, response_format: 'pcm', sample_rate: rate }),
    });
    const spoken = Buffer.from(await res.arrayBuffer());
    if (res.status !== 200) throw new Error(`flite: HTTP ${res.status} ${spoken.toString().slice(0, 300)}`);
    const pcm = Buffer.alloc(seconds * rate * 2);
    for (let at = 0; at < pcm.length; at += spoken.length)
      spoken.copy(pcm, at, 0, Math.min(spoken.length, pcm.length - at));
    return {
      wav: Buffer.concat([wavHeader(rate, 1, pcm.length), pcm]),
      speechSeconds: spoken.length / 2 / rate,
    };
  } finally {
    await server.stop();
  }
}

/** utime + stime in ms of a /proc stat file (a process's or a thread's; USER_HZ 100); 0 once it is gone. */
export function cpuMsOf(statPath) {
  try {
    const text = readFileSync(statPath, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}

/** CPU ms of each thread of process `pid` so far, by thread id. */
export function threadCpu(pid) {
  return Object.fromEntries(
    readdirSync(`/proc/${pid}/task`).map((tid) => [tid, cpuMsOf(`/proc/${pid}/task/${tid}/stat`)]),
  );
}

/** The child processes of `pid` (a voxd server's runners). */
export function childrenOf(pid) {
  return readdirSync(`/proc/${pid}/task`).flatMap((tid) =>
    readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number),
  );
}

/**
 * One run of scripts/bench-load.mjs --socket in its own process: `inFlight` keep-alive connections
 * sending the bytes of `bodyFile` to `url` for `seconds`. Resolves with the requests completed and
 * the load generator's CPU per request (ms).
 */
export function socketLoad(url, bodyFile, inFlight, seconds, contentType) {
  return new Promise((resolve, reject) => {
    const load = spawn(
      process.execPath,
      [LOAD, url, bodyFile, String(inFlight), String(seconds), contentType, '--socket'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const output = outputOf(load);
    load.once('error', reject);
    load.once('exit', (code) => {
      const cpu = output.stderr.match(/([\d.]+) ms CPU per request/);
      if (code !== 0 || !cpu) reject(new Error(`load generator on ${url} exited ${code}:\n${output.stderr}`));
      else resolve({ done: Number(output.stdout.trim()), cpuMs: Number(cpu[1]) });
    });
  });
}
