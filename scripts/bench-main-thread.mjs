// Benchmark of voxd's main thread (issue 27): for each kind of request, the CPU time the server's
// main thread spends per request, with the engines in their runner processes. One `voxd serve
// --parallel-jobs` child; its main thread's CPU time (/proc/<pid>/task/<pid>/schedstat, so not its
// worker threads, not its runners) is read before and after N requests of a kind, sent
// one at a time; the idle rate (the thread's CPU per second with nothing to do, measured first) is
// taken off over each kind's wall time. Not a test: it prints Markdown for docs/performance.md.
// Usage: npm run build && node scripts/bench-main-thread.mjs [--rounds=5] [--warmup=1] [--only=kind,kind] [--profile]
// --profile: the child runs under V8's sampling profiler (every PROFILE_INTERVAL_US, 100 µs unless
// set), and for each kind the functions that took the main thread's time during its requests are
// listed (self time, the heaviest PROFILE_TOP first, 20 unless set). The profiler's own cost
// inflates the CPU figures, so a profiled run's table is not the one to compare; and it charges
// some native time to the JavaScript function that called in (docs/performance.md found two such
// shares that perf and strace did not confirm), so a share is a lead to measure, not a cost.
// --syscalls: `strace -c` follows the main thread during each kind's requests (and the floor's), and
// the table gains the system calls per request and the event loop's wakeups (epoll_pwait) among
// them. strace slows every call, so that run's CPU figures are not the ones to compare either.

import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { wavHeader } from '../dist/src/audio/wav-encode.js';
import { openSocket } from '../dist/test/helpers/websocket.js';
import { frameOf as frame } from '../dist/test/helpers/wyoming.js';
import { SENTENCE, startServeChild } from './bench-server.mjs';

const ROUNDS = Number(process.argv.find((a) => a.startsWith('--rounds='))?.split('=')[1] ?? 5);
const WARMUP = Number(process.argv.find((a) => a.startsWith('--warmup='))?.split('=')[1] ?? 1);
const ONLY = process.argv
  .find((a) => a.startsWith('--only='))
  ?.split('=')[1]
  ?.split(',');
const SYSCALLS = process.argv.includes('--syscalls');
const PROFILE = process.argv.includes('--profile')
  ? join(mkdtempSync(join(tmpdir(), 'voxd-prof-')), 'main.cpuprofile')
  : undefined;
if (PROFILE) process.env.VOXD_PROFILE_OUT = PROFILE;
const profilerArgs = PROFILE ? ['--import', new URL('./main-thread-profiler.mjs', import.meta.url).href] : [];

const { base, wyomingPort, child, dir } = await startServeChild(
  {
    wyoming_port: 0,
    models: [
      { id: 'flite', family: 'flite_tts', task: 'tts' },
      { id: 'asr', family: 'pocketsphinx_asr', task: 'asr', mode: 'streaming' },
      { id: 'silero-vad', family: 'silero_vad', task: 'vad' },
      { id: 'diar', family: 'classic_diar', task: 'diar' },
      // In the server's own thread, with almost no work of its own: the request machinery alone.
      { id: 'fx-tts', family: 'fixture', path: '.', task: 'tts' },
    ],
  },
  profilerArgs,
);

/** The main thread's CPU time so far, in ms (schedstat: nanoseconds on a CPU, not 10 ms ticks). */
function mainThreadMs() {
  return Number(readFileSync(`/proc/${child.pid}/task/${child.pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
}

/**
 * Runs `work` with `strace -c` following thread `tid`; resolves with its system call counts by name
 * (empty without --syscalls).
 */
async function countingSyscalls(tid, work) {
  if (!SYSCALLS) {
    await work();
    return {};
  }
  const { spawn } = await import('node:child_process');
  const folder = mkdtempSync(join(tmpdir(), 'voxd-strace-'));
  const out = join(folder, 'calls.txt');
  const tracer = spawn('strace', ['-c', '-p', String(tid), '-o', out], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  tracer.once('error', (err) => {
    console.error(`--syscalls needs strace (apt-get install strace): ${err.message}`);
    process.exit(2);
  });
  // strace says on stderr when it is attached.
  await new Promise((resolve) => tracer.stderr.once('data', resolve));
  await work();
  const exited = new Promise((resolve) => tracer.once('exit', resolve));
  tracer.kill('SIGINT');
  await exited;
  const calls = {};
  for (const line of readFileSync(out, 'utf8').split('\n')) {
    const m = line.trim().match(/^[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)$/);
    if (m && m[2] !== 'total') calls[m[2]] = Number(m[1]);
  }
  rmSync(folder, { recursive: true, force: true });
  return calls;
}

async function post(path, body, headers = {}) {
  const res = await fetch(`${base}${path}`, { method: 'POST', body, headers });
  const bytes = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${bytes.toString().slice(0, 300)}`);
  return bytes;
}

// --- The audio the transcriptions, VAD and diarization get: flite's sentence at 16 kHz, repeated.
const spoken = await post(
  '/v1/audio/speech',
  JSON.stringify({ model: 'flite', input: SENTENCE, response_format: 'pcm', sample_rate: 16000 }),
  { 'content-type': 'application/json' },
);
function pcmOf(seconds) {
  const out = Buffer.alloc(seconds * 16000 * 2);
  for (let at = 0; at < out.length; at += spoken.length)
    spoken.copy(out, at, 0, Math.min(spoken.length, out.length - at));
  return out;
}
const wavOf = (pcm) => Buffer.concat([wavHeader(16000, 1, pcm.length), pcm]);
const PCM = { 5: pcmOf(5), 60: pcmOf(60) };
const WAV = { 5: wavOf(PCM[5]), 60: wavOf(PCM[60]) };
// Server-local files: the config's folder is a file root.
writeFileSync(`${dir}/5s.wav`, WAV[5]);
writeFileSync(`${dir}/60s.wav`, WAV[60]);

const multipart = (wav, model = 'asr') => {
  const form = new FormData();
  form.set('model', model);
  form.set('file', new Blob([wav]), 'a.wav');
  return form;
};
const json = (body) => [JSON.stringify(body), { 'content-type': 'application/json' }];

/** A live ingest: the PCM streamed as a chunked body in 100 ms pieces. */
function liveIngest(pcm) {
  return new Promise((resolve, reject) => {
    const url = new URL(`${base}/v1/audio/transcriptions/live?model=asr&sample_rate=16000`);
    const req = httpRequest(url, { method: 'POST', headers: { 'transfer-encoding': 'chunked' } }, (res) => {
      const parts = [];
      res.on('data', (c) => parts.push(c));
      res.on('end', () =>
        res.statusCode === 200
          ? resolve()
          : reject(new Error(`live: ${res.statusCode} ${Buffer.concat(parts)}`)),
      );
    });
    req.on('error', reject);
    for (let at = 0; at < pcm.length; at += 3200) req.write(pcm.subarray(at, at + 3200));
    req.end();
  });
}

/** One realtime turn: 5 s of 24 kHz PCM appended in 100 ms events, committed, transcribed. */
const PCM24 = (() => {
  const src = new Int16Array(PCM[5].buffer, PCM[5].byteOffset, PCM[5].length / 2);
  const out = Buffer.alloc(Math.floor((src.length * 3) / 2) * 2);
  for (let i = 0; i < out.length / 2; i++)
    out.writeInt16LE(src[Math.min(src.length - 1, Math.floor((i * 2) / 3))], i * 2);
  return out;
})();
async function realtimeTurn() {
  const { ws, messages, send } = await openSocket(`${base}/v1/realtime?model=asr`);
  try {
    for (let at = 0; at < PCM24.length; at += 4800)
      send({ type: 'input_audio_buffer.append', audio: PCM24.subarray(at, at + 4800).toString('base64') });
    send({ type: 'input_audio_buffer.commit' });
    await messages.nth('conversation.item.input_audio_transcription.completed', 0, 60_000);
  } finally {
    ws.close();
  }
}

/** One Wyoming transcription of 5 s, sent at once (searched whole). */
function wyomingTranscription() {
  return new Promise((resolve, reject) => {
    const socket = connect(wyomingPort, '127.0.0.1');
    let buffer = Buffer.alloc(0);
    socket.on('error', reject);
    socket.on('data', (chunk) => {
      buffer = Buffer.concat([buffer, chunk]);
      if (buffer.includes('"transcript"')) {
        socket.destroy();
        resolve();
      }
    });
    const format = { rate: 16000, width: 2, channels: 1 };
    const parts = [frame('transcribe', { name: 'asr' }), frame('audio-start', format)];
    for (let at = 0; at < PCM[5].length; at += 3200)
      parts.push(frame('audio-chunk', format, PCM[5].subarray(at, at + 3200)));
    parts.push(frame('audio-stop'));
    socket.write(Buffer.concat(parts));
  });
}

const speech = (format) =>
  post('/v1/audio/speech', ...json({ model: 'flite', input: SENTENCE, response_format: format }));

const KINDS = [
  ['tts-wav', 'TTS, 20 words, wav', () => speech('wav')],
  ['tts-mp3', 'TTS, 20 words, mp3', () => speech('mp3')],
  [
    'fixture-tts',
    'TTS on the fixture engine (no runner), one word, wav',
    () => post('/v1/audio/speech', ...json({ model: 'fx-tts', input: 'hi', response_format: 'wav' })),
  ],
  [
    'asr-5-multipart',
    'transcription, 5 s, multipart WAV',
    () => post('/v1/audio/transcriptions', multipart(WAV[5])),
  ],
  [
    'asr-60-multipart',
    'transcription, 60 s, multipart WAV',
    () => post('/v1/audio/transcriptions', multipart(WAV[60])),
  ],
  [
    'asr-5-base64',
    'transcription, 5 s, base64 JSON',
    () => post('/v1/tasks/run', ...json({ model: 'asr', audio_base64: WAV[5].toString('base64') })),
  ],
  [
    'asr-60-base64',
    'transcription, 60 s, base64 JSON',
    () => post('/v1/tasks/run', ...json({ model: 'asr', audio_base64: WAV[60].toString('base64') })),
  ],
  [
    'asr-5-file',
    'transcription, 5 s, server-local file',
    () => post('/v1/tasks/run', ...json({ model: 'asr', audio: `${dir}/5s.wav` })),
  ],
  [
    'asr-60-file',
    'transcription, 60 s, server-local file',
    () => post('/v1/tasks/run', ...json({ model: 'asr', audio: `${dir}/60s.wav` })),
  ],
  [
    'vad-5',
    'VAD, 5 s, base64 JSON',
    () => post('/v1/tasks/run', ...json({ model: 'silero-vad', audio_base64: WAV[5].toString('base64') })),
  ],
  [
    'diar-5',
    'diarization, 5 s, multipart WAV',
    () => post('/v1/audio/transcriptions', multipart(WAV[5], 'diar')),
  ],
  // The same routes on a fast engine (the classic diarizer: 60 s in well under a second), so that
  // the 60 s rows are not 8 s of wall time whose idle share drowns the difference: how the main
  // thread's time grows with the length of the audio.
  [
    'diar-60',
    'diarization, 60 s, multipart WAV',
    () => post('/v1/audio/transcriptions', multipart(WAV[60], 'diar')),
  ],
  [
    'diar-5-base64',
    'diarization, 5 s, base64 JSON',
    () => post('/v1/tasks/run', ...json({ model: 'diar', audio_base64: WAV[5].toString('base64') })),
  ],
  [
    'diar-60-base64',
    'diarization, 60 s, base64 JSON',
    () => post('/v1/tasks/run', ...json({ model: 'diar', audio_base64: WAV[60].toString('base64') })),
  ],
  [
    'diar-5-file',
    'diarization, 5 s, server-local file',
    () => post('/v1/tasks/run', ...json({ model: 'diar', audio: `${dir}/5s.wav` })),
  ],
  [
    'diar-60-file',
    'diarization, 60 s, server-local file',
    () => post('/v1/tasks/run', ...json({ model: 'diar', audio: `${dir}/60s.wav` })),
  ],
  ['live-5', 'live ingest, 5 s of PCM', () => liveIngest(PCM[5])],
  ['realtime-5', 'realtime turn, 5 s', () => realtimeTurn()],
  ['wyoming-5', 'Wyoming transcription, 5 s', () => wyomingTranscription()],
].filter(([key]) => !ONLY || ONLY.includes(key));

// Warm every model (loads, first-run costs) and, with --warmup=N, the server's code: V8 optimizes a
// function only after many calls, and a request path runs hundreds of functions once each, so the
// first few hundred requests of a kind cost up to half as much again as a server's steady state.
for (const [, , run] of KINDS) for (let i = 0; i < Math.max(1, WARMUP); i++) await run();

// The idle rate: what the thread spends with no request (timers, metrics), per second, taken off
// each row over its wall time. Measured once the warm-up's own after-effects (memory given back,
// connections closing) had two seconds to pass: those of a row's requests are that row's cost.
async function idleRate() {
  const c0 = mainThreadMs();
  await new Promise((r) => setTimeout(r, 3000));
  return (mainThreadMs() - c0) / 3;
}
await new Promise((r) => setTimeout(r, 2000));
const idleWindow = { label: 'idle, per second', from: Number(process.hrtime.bigint() / 1000n), rounds: 3 };
const idlePerS = await idleRate();
idleWindow.to = Number(process.hrtime.bigint() / 1000n);

const rows = [];
for (const [key, label, run] of KINDS) {
  const t0 = performance.now();
  const c0 = mainThreadMs();
  // CLOCK_MONOTONIC in µs, the clock of V8's profile timestamps on Linux.
  const from = Number(process.hrtime.bigint() / 1000n);
  const calls = await countingSyscalls(child.pid, async () => {
    for (let i = 0; i < ROUNDS; i++) await run();
  });
  const to = Number(process.hrtime.bigint() / 1000n);
  const wallS = (performance.now() - t0) / 1000;
  rows.push({ key, label, from, to, busyMs: mainThreadMs() - c0, wallS, calls, n: ROUNDS });
}
for (const r of rows) {
  r.perRequest = (r.busyMs - idlePerS * r.wallS) / r.n;
  r.wallPerRequest = (r.wallS * 1000) / r.n;
}

// The floor (bench-floor-server.mjs): plain node:http in a child of its own, reading the same bodies
// whole and answering a line of JSON (or, for the TTS rows, as many bytes as voxd's answer has, made
// there or by a runner process), nothing else.
if (!ONLY || ONLY.includes('floor')) {
  const { spawn } = await import('node:child_process');
  const plain = spawn(process.execPath, [new URL('./bench-floor-server.mjs', import.meta.url).pathname], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const port = await new Promise((resolve) =>
    plain.stderr.on('data', (d) => {
      const m = String(d).match(/port (\d+)/);
      if (m) resolve(m[1]);
    }),
  );
  const plainMs = () =>
    Number(readFileSync(`/proc/${plain.pid}/task/${plain.pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
  const send = async (body, headers) => {
    const res = await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body, headers });
    await res.arrayBuffer();
  };
  // A 20-word TTS: a small JSON body in, the answer voxd gives (its size) out.
  const ttsBytes = (await speech('wav')).length;
  const ttsBody = JSON.stringify({ model: 'flite', input: SENTENCE, response_format: 'wav' });
  for (const [label, make] of [
    [
      'floor: plain node:http, a 20-word TTS request in, a WAV of its size out',
      () => [ttsBody, { 'content-type': 'application/json', 'x-answer-bytes': String(ttsBytes) }],
    ],
    [
      'floor: the same, the answer made by a runner process and read back from its file',
      () => [
        ttsBody,
        { 'content-type': 'application/json', 'x-answer-bytes': String(ttsBytes), 'x-runner': 'file' },
      ],
    ],
    ['floor: plain node:http, 5 s multipart WAV', () => [multipart(WAV[5])]],
    ['floor: plain node:http, 60 s multipart WAV', () => [multipart(WAV[60])]],
    [
      'floor: plain node:http, 5 s base64 JSON',
      () => json({ model: 'asr', audio_base64: WAV[5].toString('base64') }),
    ],
    [
      'floor: plain node:http, 60 s base64 JSON',
      () => json({ model: 'asr', audio_base64: WAV[60].toString('base64') }),
    ],
  ]) {
    for (let i = 0; i < 5; i++) await send(...make());
    const n = Math.max(20, ROUNDS);
    const c0 = plainMs();
    const calls = await countingSyscalls(plain.pid, async () => {
      for (let i = 0; i < n; i++) await send(...make());
    });
    rows.push({
      key: 'floor',
      label,
      perRequest: (plainMs() - c0) / n,
      wallPerRequest: Number.NaN,
      calls,
      n,
    });
  }
  plain.kill('SIGTERM');
}

console.log(
  `\nRounds: ${ROUNDS} per kind (after ${WARMUP} to warm up), one request at a time; main thread idle: ${idlePerS.toFixed(2)} ms/s.\n`,
);
const perCall = (r, names) => (names.reduce((sum, name) => sum + (r.calls[name] ?? 0), 0) / r.n).toFixed(1);
if (SYSCALLS) {
  console.log(
    '| request | main thread CPU per request (ms) | wall (ms) | system calls | event-loop wakeups (epoll_pwait) | futex (thread pool, worker threads) |',
  );
  console.log('|---|---:|---:|---:|---:|---:|');
} else {
  console.log('| request | main thread CPU per request (ms) | wall per request (ms) |');
  console.log('|---|---:|---:|');
}
for (const r of rows) {
  const wall = Number.isNaN(r.wallPerRequest) ? '' : r.wallPerRequest.toFixed(0);
  const counts = SYSCALLS
    ? ` ${perCall(r, Object.keys(r.calls))} | ${perCall(r, ['epoll_pwait', 'epoll_wait'])} | ${perCall(r, ['futex'])} |`
    : '';
  console.log(`| ${r.label} | ${r.perRequest.toFixed(2)} | ${wall} |${counts}`);
}
if (PROFILE) {
  child.kill('SIGUSR2');
  while (!existsSync(PROFILE)) await new Promise((r) => setTimeout(r, 100));
  await new Promise((r) => setTimeout(r, 500)); // the write is synchronous, but may be under way
  const profile = JSON.parse(readFileSync(PROFILE, 'utf8'));
  rmSync(dirname(PROFILE), { recursive: true, force: true });
  for (const r of [idleWindow, ...rows.filter((r) => r.key !== 'floor')]) printProfile(profile, r);
}
child.kill('SIGTERM');
process.exit(0);

/**
 * The functions that took a kind's main-thread time, per request, the heaviest first: by self time
 * (the function itself), then by inclusive time (with what it called) for voxd's own functions,
 * which shows which step of a request the time belongs to.
 */
function printProfile(profile, { label, from, to, rounds = ROUNDS }) {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const nameOf = ({ functionName, url, lineNumber }) =>
    `${functionName || '(anonymous)'} ${url ? `${basename(url)}:${lineNumber + 1}` : ''}`;
  const self = new Map();
  const inclusive = new Map();
  let busy = 0;
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = profile.timeDeltas[i + 1] ?? 0;
    t += profile.timeDeltas[i];
    if (t < from || t > to) continue;
    const leaf = nodes.get(profile.samples[i]).callFrame;
    if (leaf.functionName === '(idle)') continue;
    self.set(nameOf(leaf), (self.get(nameOf(leaf)) ?? 0) + dt);
    busy += dt;
    const seen = new Set();
    for (let id = profile.samples[i]; id !== undefined; id = parent.get(id)) {
      const frame = nodes.get(id).callFrame;
      if (!frame.url.includes('/dist/src/')) continue;
      const name = nameOf(frame);
      if (seen.has(name)) continue;
      seen.add(name);
      inclusive.set(name, (inclusive.get(name) ?? 0) + dt);
    }
  }
  const top = (map) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, Number(process.env.PROFILE_TOP ?? 20))
      .map(([name, us]) => `- ${((100 * us) / busy).toFixed(1)} % ${name}`)
      .join('\n');
  console.log(`\n### ${label}: ${(busy / 1000 / rounds).toFixed(2)} ms sampled a request\n`);
  console.log(`Self time:\n${top(self)}\n\nWith what they called (voxd's functions):\n${top(inclusive)}`);
}
