// Where one short request's time goes: voxd in its own process (`voxd serve --parallel-jobs`, one
// slot) is sent the same request one at a time for a while by scripts/bench-load.mjs --socket, a
// client in a process of its own with the request built once, and each request's log line gives its phases
// (docs/observability.md): read_ms (arrival to the body read and parsed), prepare_ms (audio
// decoded, engine request made), queue_ms, inference_ms (the run: the runner receiving the audio,
// the engine, its answer back), reply_ms (the answer made and written). Beside them, the same
// engine called directly in its runner process with the same decoded audio, as
// bench-raw-engine.mjs's "alone" side calls it: inference_ms less that is what voxd adds to the run
// (the audio converted to the model's format, the checkout, the file the audio goes through).
// The client's view is the load generator's requests per second, one in flight.
// Prints a Markdown table of medians for docs/performance.md.
// Usage: npm run build && node scripts/bench-request-phases.mjs [seconds] [--only=vad-json,...]
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { durationMs } from '../dist/src/audio/types.js';
import { decodeWav } from '../dist/src/audio/wav-decode.js';
import { loadAlone, SENTENCE, startServeChild } from './bench-server.mjs';

const args = process.argv.slice(2);
const SECONDS = Number(args.find((a) => /^\d+$/.test(a)) ?? 6);
const ONLY = args
  .find((a) => a.startsWith('--only='))
  ?.slice(7)
  .split(',');
const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'voxd-bench-phases-'));
const load = new URL('./bench-load.mjs', import.meta.url).pathname;

const median = (v) => {
  const s = [...v].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.floor(s.length / 2)];
};

/** A multipart body with `fields` and the WAV as `file`, and its content type. */
function multipart(fields, wav) {
  const boundary = `voxdbench${Date.now()}`;
  const parts = Object.entries(fields).map(
    ([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`,
  );
  const body = Buffer.concat([
    Buffer.from(parts.join('')),
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\n`,
    ),
    wav,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return { body, type: `multipart/form-data; boundary=${boundary}` };
}

// The audio: the sentence spoken by flite (16 kHz mono PCM16, 6.1 s), made once.
const speaker = await startServeChild({ models: [{ id: 'flite', family: 'flite_tts', task: 'tts' }] });
const wav = Buffer.from(
  await (
    await fetch(`${speaker.base}/v1/audio/speech`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'flite', input: SENTENCE }),
    })
  ).arrayBuffer(),
);
speaker.child.kill('SIGKILL');
const audio = decodeWav(wav);
const seconds = durationMs(audio) / 1000;

const CASES = [
  {
    key: 'tts-json',
    label: 'flite TTS, 20 words, JSON',
    model: { id: 'flite', family: 'flite_tts', task: 'tts' },
    route: '/v1/audio/speech',
    body: () => ({
      body: Buffer.from(JSON.stringify({ model: 'flite', input: SENTENCE })),
      type: 'application/json',
    }),
    raw: { task: 'tts', text: SENTENCE, options: {} },
  },
  {
    key: 'vad-json',
    label: `silero-vad, ${seconds.toFixed(1)} s, base64 JSON`,
    model: { id: 'silero-vad', family: 'silero_vad', task: 'vad' },
    route: '/v1/tasks/run',
    body: () => ({
      body: Buffer.from(JSON.stringify({ model: 'silero-vad', audio_base64: wav.toString('base64') })),
      type: 'application/json',
    }),
    raw: { task: 'vad', audio, options: {} },
  },
  {
    key: 'diar-json',
    label: `classic diarizer, ${seconds.toFixed(1)} s, base64 JSON`,
    model: { id: 'diar', family: 'classic_diar', task: 'diar' },
    route: '/v1/tasks/run',
    body: () => ({
      body: Buffer.from(JSON.stringify({ model: 'diar', audio_base64: wav.toString('base64') })),
      type: 'application/json',
    }),
    raw: { task: 'diar', audio, options: {} },
  },
  {
    key: 'diar-multipart',
    label: `classic diarizer, ${seconds.toFixed(1)} s, multipart`,
    model: { id: 'diar', family: 'classic_diar', task: 'diar' },
    route: '/v1/audio/transcriptions',
    body: () => multipart({ model: 'diar' }, wav),
    raw: { task: 'diar', audio, options: {} },
  },
].filter((c) => !ONLY || ONLY.includes(c.key));

/** The engine alone, in its runner process: the median of `n` calls with the decoded audio. */
async function engineAlone(c, n) {
  const {
    weights,
    sessions: [session],
  } = await loadAlone(c.model.family, c.model.id, c.model.task);
  const signal = new AbortController().signal;
  const times = [];
  for (let i = 0; i < n + 5; i++) {
    const t = performance.now();
    await session.run(c.raw, { signal });
    if (i >= 5) times.push(performance.now() - t);
  }
  await session.dispose();
  await weights.dispose();
  return median(times);
}

const rows = [];
for (const c of CASES) {
  // Request lines are logged at debug without --log: the child's stderr has them.
  const server = await startServeChild({ log_level: 'debug', models: [{ ...c.model, slots: 1 }] });
  const log = () => server.stderr();
  const { body, type } = c.body();
  const bodyFile = join(dir, `${c.key}.body`);
  writeFileSync(bodyFile, body);
  const url = `${server.base}${c.route}`;
  // Warm-up: the model loaded, the server's code optimized.
  await run(process.execPath, [load, url, bodyFile, '1', '2', type, '--socket']);
  const from = log().length;
  const { stdout } = await run(process.execPath, [
    load,
    url,
    bodyFile,
    '1',
    String(SECONDS),
    type,
    '--socket',
  ]);
  const lines = log()
    .slice(from)
    .split('\n')
    .filter((l) => l.includes('"duration_ms"'))
    .map((l) => JSON.parse(l))
    .filter((l) => l.status === 200);
  server.child.kill('SIGKILL');
  const phase = (k) => median(lines.map((l) => l[k] ?? 0));
  const alone = await engineAlone(c, 30);
  const row = {
    label: c.label,
    bytes: body.length,
    client: (SECONDS * 1000) / Number(stdout),
    total: phase('duration_ms'),
    read: phase('read_ms'),
    prepare: phase('prepare_ms'),
    queue: phase('queue_ms'),
    inference: phase('inference_ms'),
    reply: phase('reply_ms'),
    alone,
  };
  rows.push(row);
  console.error(JSON.stringify(row));
}

const f = (x) => x.toFixed(2);
console.log(
  '| request | body (KB) | client, one in flight (ms) | voxd (duration_ms) | read_ms | prepare_ms | queue_ms | inference_ms | of which the engine alone | reply_ms |',
);
console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows)
  console.log(
    `| ${r.label} | ${(r.bytes / 1000).toFixed(0)} | ${f(r.client)} | ${f(r.total)} | ${f(r.read)} | ${f(r.prepare)} | ${f(r.queue)} | ${f(r.inference)} | ${f(r.alone)} | ${f(r.reply)} |`,
  );
rmSync(dir, { recursive: true, force: true });
process.exit(0);
