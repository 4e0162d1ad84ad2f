// What a large request costs the server in resident memory, and whether it comes back: a real
// `voxd serve` child with a fixture model, fed two hours of audio as a server file and as a
// multipart upload (16 kHz mono, 230 MB), and 20 minutes of 44.1 kHz stereo (resampled to 16 kHz
// mono, 212 MB), then JSON bodies of 51 MB (base64 audio) and 50 MB (a refused model id). Prints VmRSS before, the peak (VmHWM) and VmRSS 1 s and 5 s after each answer.
//   node scripts/bench-memory.mjs        (after npm run build)
import { spawn } from 'node:child_process';
import { mkdtempSync, openAsBlob, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const dir = mkdtempSync(join(tmpdir(), 'voxd-bench-memory-'));

function wavFile(path, { seconds, rate, channels }) {
  const frames = seconds * rate;
  const dataBytes = frames * channels * 2;
  const head = Buffer.alloc(44);
  head.write('RIFF', 0, 'latin1');
  head.writeUInt32LE(36 + dataBytes, 4);
  head.write('WAVEfmt ', 8, 'latin1');
  head.writeUInt32LE(16, 16);
  head.writeUInt16LE(1, 20);
  head.writeUInt16LE(channels, 22);
  head.writeUInt32LE(rate, 24);
  head.writeUInt32LE(rate * channels * 2, 28);
  head.writeUInt16LE(channels * 2, 32);
  head.writeUInt16LE(16, 34);
  head.write('data', 36, 'latin1');
  head.writeUInt32LE(dataBytes, 40);
  // A quiet sawtooth: real samples, cheap to make.
  const data = Buffer.alloc(dataBytes);
  for (let i = 0; i < dataBytes / 2; i++) data.writeInt16LE(((i % 200) - 100) * 30, i * 2);
  writeFileSync(path, Buffer.concat([head, data]));
}

function status(pid) {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)[1]);
  return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
}

/** Resets VmHWM to the current RSS (Linux: writing 5 to clear_refs), so each case has its own peak. */
function resetPeak(pid) {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
}

const config = join(dir, 'server.json');
writeFileSync(
  config,
  JSON.stringify({ ui: false, models: [{ id: 'asr', family: 'fixture', path: '.', task: 'asr' }] }),
);
const long = join(dir, 'two-hours.wav');
const stereo = join(dir, 'stereo-44k.wav');
wavFile(long, { seconds: 7200, rate: 16000, channels: 1 });
wavFile(stereo, { seconds: 1200, rate: 44100, channels: 2 });
const short = join(dir, 'twenty-minutes.wav');
wavFile(short, { seconds: 1200, rate: 16000, channels: 1 });

const child = spawn(
  process.execPath,
  ['dist/src/cli/main.js', 'serve', '--config', config, '--port', '0', '--enable-fixture'],
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

async function run(what, send, expected = 200) {
  resetPeak(child.pid);
  const before = status(child.pid).rss;
  const started = performance.now();
  const res = await send();
  const ms = performance.now() - started;
  if (res.status !== expected) throw new Error(`${what}: ${res.status} ${await res.text()}`);
  await res.arrayBuffer();
  const { hwm } = status(child.pid);
  await sleep(1000);
  const after1 = status(child.pid).rss;
  await sleep(4000);
  const after5 = status(child.pid).rss;
  const f = (x) => x.toFixed(0).padStart(6);
  console.log(
    `| ${what.padEnd(44)} | ${f(before)} | ${f(hwm)} | ${f(after1)} | ${f(after5)} | ${(ms / 1000).toFixed(1).padStart(5)} |`,
  );
}

const runPath = (path) => () =>
  fetch(`${url}/v1/tasks/run`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'asr', request: { audio: path } }),
  });
const upload = (path) => async () => {
  const form = new FormData();
  form.set('model', 'asr');
  form.set('file', await openAsBlob(path), 'a.wav');
  return fetch(`${url}/v1/audio/transcriptions`, { method: 'POST', body: form });
};

try {
  await run('warm-up: 2 h, server file', runPath(long));
  console.log('| request | RSS before (MB) | peak | 1 s after | 5 s after | seconds |');
  console.log('|---|---:|---:|---:|---:|---:|');
  await run('2 h 16 kHz mono, server file', runPath(long));
  await run('2 h 16 kHz mono, multipart upload (spooled)', upload(long));
  await run('20 min 44.1 kHz stereo, server file', runPath(stereo));
  await run('20 min 44.1 kHz stereo, multipart upload', upload(stereo));
  await run('2 h 16 kHz mono, server file (again)', runPath(long));
  const json = (body) => () =>
    fetch(`${url}/v1/tasks/run`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  const base64 = JSON.stringify({ model: 'asr', audio_base64: readFileSync(short).toString('base64') });
  await run('20 min 16 kHz mono as base64 JSON (51 MB)', json(base64));
  await run('50 MB JSON body, unknown model (404)', json(JSON.stringify({ model: 'm'.repeat(5e7) })), 404);
} finally {
  child.kill('SIGTERM');
  await new Promise((resolve) => child.on('exit', resolve));
  rmSync(dir, { recursive: true, force: true });
}
