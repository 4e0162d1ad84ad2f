// Where one voxd process's main thread saturates (issue 27): the fixture engine (no runner, almost
// no work of its own: a short tone, or the RMS of the input) at 1, 2 and 4 slots, loaded by
// scripts/bench-load.mjs (its own process) with twice as many requests in flight as slots, for three
// kinds of request: a one-word TTS answered as WAV, 5 s of 16 kHz audio as base64 JSON, and a
// 20-word flite TTS (in its runner processes, one a slot). For each, the requests per second and the server main thread's share of one core over the run
// (/proc/<pid>/task/<pid>/schedstat). When that share nears 100 % the main thread is the ceiling,
// whatever the slots: its CPU per request is then what bounds a process (docs/performance.md).
// Usage: npm run build && node scripts/bench-saturation.mjs [--seconds=8]
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { wavHeader } from '../dist/src/audio/wav-encode.js';
import { SENTENCE, startServeChild } from './bench-server.mjs';

const SECONDS = Number(process.argv.find((a) => a.startsWith('--seconds='))?.split('=')[1] ?? 8);

const pcm = Buffer.alloc(5 * 16000 * 2);
for (let i = 0; i < pcm.length / 2; i++) pcm.writeInt16LE(Math.round(8000 * Math.sin(i / 5)), i * 2);
const wav5 = Buffer.concat([wavHeader(16000, 1, pcm.length), pcm]);

const KINDS = [
  ['TTS, one word, wav', '/v1/audio/speech', { model: 'fx-tts', input: 'hello', response_format: 'wav' }],
  [
    'transcription, 5 s, base64 JSON',
    '/v1/tasks/run',
    { model: 'fx-asr', audio_base64: wav5.toString('base64') },
  ],
  [
    'TTS, 20 words, flite, wav',
    '/v1/audio/speech',
    { model: 'flite', input: SENTENCE, response_format: 'wav' },
  ],
];

const rows = [];
for (const slots of [1, 2, 4]) {
  const { base, child, dir } = await startServeChild({
    models: [
      { id: 'fx-tts', family: 'fixture', path: '.', task: 'tts', slots },
      { id: 'fx-asr', family: 'fixture', path: '.', task: 'asr', slots },
      // A real engine in its runner processes: the main thread's share of a request with a round
      // trip to a runner and a 180 KB answer, under load.
      { id: 'flite', family: 'flite_tts', task: 'tts', slots },
    ],
  });
  const mainMs = () =>
    Number(readFileSync(`/proc/${child.pid}/task/${child.pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
  for (const [label, path, body] of KINDS) {
    const bodyFile = join(dir, 'body.json');
    writeFileSync(bodyFile, JSON.stringify(body));
    const load = (seconds) =>
      new Promise((resolve, reject) => {
        const gen = spawn(
          process.execPath,
          [
            new URL('./bench-load.mjs', import.meta.url).pathname,
            `${base}${path}`,
            bodyFile,
            String(2 * slots),
            String(seconds),
          ],
          { stdio: ['ignore', 'pipe', 'inherit'] },
        );
        let out = '';
        gen.stdout.on('data', (d) => {
          out += d;
        });
        gen.on('exit', (code) =>
          code === 0 ? resolve(Number(out.trim())) : reject(new Error(`load: ${code}`)),
        );
      });
    await load(1); // warm-up
    const c0 = mainMs();
    const t0 = performance.now();
    const done = await load(SECONDS);
    const wallS = (performance.now() - t0) / 1000;
    const busy = mainMs() - c0;
    rows.push({ label, slots, rps: done / SECONDS, share: busy / (wallS * 1000), msPer: busy / done });
  }
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
}

console.log('\n| request | slots | requests/s | main thread busy | main thread per request (ms) |');
console.log('|---|---:|---:|---:|---:|');
for (const r of rows)
  console.log(
    `| ${r.label} | ${r.slots} | ${r.rps.toFixed(0)} | ${(100 * r.share).toFixed(0)} % | ${r.msPer.toFixed(2)} |`,
  );
process.exit(0);
