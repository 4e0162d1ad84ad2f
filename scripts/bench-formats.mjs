// What ffmpeg costs: flite speech answered as wav, mp3 and opus at 1 and 2 slots (requests/s, and
// the server's event-loop lag while loaded), and transcribing 60 s of speech sent as mp3 instead of
// WAV (the fixture model, which only decodes, and pocketsphinx). Prints Markdown tables for
// docs/performance.md.
// Usage: npm run build && node scripts/bench-formats.mjs [seconds-per-round] [--rounds=N]
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { SENTENCE, startBenchServer } from './bench-server.mjs';

const args = process.argv.slice(2);
const SECONDS = Number(args.find((a) => /^\d+$/.test(a)) ?? 4);
const ROUNDS = Number(args.find((a) => a.startsWith('--rounds='))?.slice(9) ?? 3);
const LOAD = fileURLToPath(new URL('./bench-load.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'voxd-bench-formats-'));

const start = (models) => startBenchServer(dir, models);

async function post(url, body) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const bytes = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200) throw new Error(`${res.status} ${bytes.toString()}`);
  return bytes;
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

// ---- speech formats ----
const bodyFiles = {};
for (const format of ['wav', 'mp3', 'opus']) {
  bodyFiles[format] = join(dir, `${format}.json`);
  writeFileSync(
    bodyFiles[format],
    JSON.stringify({ model: 'flite', input: SENTENCE, response_format: format }),
  );
}
const servers = [];
for (const slots of [1, 2]) {
  const voxd = await start([{ id: 'flite', family: 'flite_tts', task: 'tts', slots }]);
  for (const format of Object.keys(bodyFiles))
    await Promise.all(
      Array.from({ length: slots }, () =>
        post(`${voxd.url}/v1/audio/speech`, { model: 'flite', input: SENTENCE, response_format: format }),
      ),
    );
  servers.push({ slots, voxd, runs: { wav: [], mp3: [], opus: [] }, lag: { wav: [], mp3: [], opus: [] } });
}
for (let i = 0; i < ROUNDS; i++) {
  for (const s of servers) {
    for (const format of Object.keys(bodyFiles)) {
      const lag = monitorEventLoopDelay({ resolution: 1 });
      lag.enable();
      const started = performance.now();
      const load = spawn(
        process.execPath,
        [LOAD, `${s.voxd.url}/v1/audio/speech`, bodyFiles[format], String(s.slots * 2), String(SECONDS)],
        {
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      let out = '';
      load.stdout.on('data', (d) => {
        out += d;
      });
      await new Promise((resolve) => load.on('exit', resolve));
      lag.disable();
      s.runs[format].push(Number(out.trim()) / ((performance.now() - started) / 1000));
      s.lag[format].push(lag.percentile(99) / 1e6);
    }
  }
}
console.log(
  '| format | slots | requests/s (median) | rounds | vs wav | event-loop lag p99 (ms, worst round) |',
);
console.log('|---|---:|---:|---|---:|---:|');
for (const s of servers) {
  const wav = median(s.runs.wav);
  for (const format of Object.keys(bodyFiles)) {
    const m = median(s.runs[format]);
    console.log(
      `| ${format} | ${s.slots} | ${m.toFixed(1)} | ${s.runs[format].map((r) => r.toFixed(1)).join(', ')} | ${(m / wav).toFixed(2)} | ${Math.max(...s.lag[format]).toFixed(1)} |`,
    );
  }
  await s.voxd.close();
}

// ---- transcription of 60 s: WAV vs mp3 ----
const voxd = await start([
  { id: 'flite', family: 'flite_tts', task: 'tts' },
  { id: 'asr', family: 'fixture', path: '.', task: 'asr' },
  { id: 'pocketsphinx', family: 'pocketsphinx_asr', task: 'asr' },
]);
const sentences = Array.from({ length: 10 }, () => SENTENCE).join(' ');
const speech = await post(`${voxd.url}/v1/audio/speech`, {
  model: 'flite',
  input: sentences,
  response_format: 'wav',
});
const wavFile = join(dir, 'speech.wav');
writeFileSync(wavFile, speech);
// Padded or cut to exactly 60 s at the engine's rate.
const sixty = join(dir, 'sixty.wav');
execFileSync('ffmpeg', ['-v', 'error', '-y', '-i', wavFile, '-af', 'apad', '-t', '60', sixty]);
const mp3 = join(dir, 'sixty.mp3');
execFileSync('ffmpeg', ['-v', 'error', '-y', '-i', sixty, '-c:a', 'libmp3lame', '-b:a', '64k', mp3]);
const inputs = { wav: readFileSync(sixty), mp3: readFileSync(mp3) };
console.log('\n| model | input (60 s) | bytes | seconds per request (median of 5) | vs wav |');
console.log('|---|---|---:|---:|---:|');
for (const model of ['asr', 'pocketsphinx']) {
  const times = { wav: [], mp3: [] };
  for (let i = 0; i < 5; i++) {
    for (const kind of ['wav', 'mp3']) {
      const form = new FormData();
      form.set('model', model);
      form.set('file', new Blob([inputs[kind]]), `a.${kind}`);
      const started = performance.now();
      const res = await fetch(`${voxd.url}/v1/audio/transcriptions`, { method: 'POST', body: form });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`${model} ${kind}: ${res.status}`);
      times[kind].push((performance.now() - started) / 1000);
    }
  }
  for (const kind of ['wav', 'mp3'])
    console.log(
      `| ${model} | ${kind} | ${inputs[kind].length} | ${median(times[kind]).toFixed(3)} | ${(median(times[kind]) / median(times.wav)).toFixed(2)} |`,
    );
}
await voxd.close();
rmSync(dir, { recursive: true, force: true });
