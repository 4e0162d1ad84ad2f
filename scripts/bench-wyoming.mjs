// Benchmark of the Wyoming listener (issue 26) against the HTTP routes on one `voxd serve` child
// process, interleaved so both see the same machine: (1) time to the first audio of a synthesis
// (flite, 20 words): Wyoming `synthesize` to its first audio-chunk, against HTTP
// `/v1/audio/speech` with `stream_format: "audio"` to its first body byte; (2) streamed synthesis:
// from the chunk that completes the first sentence to its first audio-chunk, against the same
// sentence alone over HTTP (the engine's own first-sentence time); (3) transcriptions per second
// of 5 s of speech (pocketsphinx, 2 slots) at concurrency 1 and 2, Wyoming against multipart HTTP.
// Not a test: it prints Markdown for docs/performance.md.
// Usage: npm run build && node scripts/bench-wyoming.mjs [--rounds=20]

import { connect } from 'node:net';
import { wavHeader } from '../dist/src/audio/wav-encode.js';
import { frameOf as frame } from '../dist/test/helpers/wyoming.js';
import { startServeChild } from './bench-server.mjs';

const ROUNDS = Number(process.argv.find((a) => a.startsWith('--rounds='))?.split('=')[1] ?? 20);
const TEXT =
  'The quick brown fox jumps over the lazy dog while the sun sets slowly behind the quiet green hills tonight.';
const FIRST = 'The weather is nice today.';

const { base, wyomingPort: wyPort } = await startServeChild({
  wyoming_port: 0,
  models: [
    { id: 'flite', family: 'flite_tts', task: 'tts', mode: 'streaming' },
    { id: 'asr', family: 'pocketsphinx_asr', task: 'asr', slots: 2 },
  ],
});
const _sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A Wyoming connection: `until(type)` resolves with the time the next event of that type arrived. */
async function wyoming() {
  const socket = connect(wyPort, '127.0.0.1');
  await new Promise((r) => socket.once('connect', r));
  socket.setNoDelay(true);
  let buffer = Buffer.alloc(0);
  const waiters = [];
  const events = [];
  socket.on('data', (chunk) => {
    buffer = Buffer.concat([buffer, chunk]);
    for (;;) {
      const nl = buffer.indexOf(10);
      if (nl < 0) break;
      const h = JSON.parse(buffer.subarray(0, nl).toString());
      const size = nl + 1 + (h.data_length ?? 0) + (h.payload_length ?? 0);
      if (buffer.length < size) break;
      const data = h.data_length
        ? JSON.parse(buffer.subarray(nl + 1, nl + 1 + h.data_length).toString())
        : {};
      const payload = h.payload_length ? buffer.subarray(size - h.payload_length, size) : undefined;
      buffer = buffer.subarray(size);
      events.push({ type: h.type, data, payload, at: performance.now() });
      for (const w of waiters.splice(0)) w();
    }
  });
  const until = async (type, from = 0) => {
    for (;;) {
      const e = events.slice(from).find((x) => x.type === type);
      if (e) return e;
      if (events.slice(from).some((x) => x.type === 'error')) throw new Error(JSON.stringify(events.at(-1)));
      await new Promise((r) => waiters.push(r));
    }
  };
  return { send: (...a) => socket.write(frame(...a)), until, events, close: () => socket.destroy() };
}

async function httpFirstByte(input) {
  const t0 = performance.now();
  const res = await fetch(`${base}/v1/audio/speech`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      model: 'flite',
      input,
      stream: true,
      stream_format: 'audio',
      response_format: 'pcm',
    }),
  });
  const reader = res.body.getReader();
  await reader.read();
  const first = performance.now() - t0;
  while (!(await reader.read()).done);
  return first;
}

async function wyomingFirstChunk(input) {
  const c = await wyoming();
  const t0 = performance.now();
  c.send('synthesize', { text: input, voice: { name: 'flite' } });
  const first = (await c.until('audio-chunk')).at - t0;
  await c.until('audio-stop');
  c.close();
  return first;
}

async function streamedFirstChunk() {
  const c = await wyoming();
  c.send('synthesize-start', { voice: { name: 'flite' } });
  c.send('synthesize-chunk', { text: 'The weather is ni' });
  const t0 = performance.now();
  c.send('synthesize-chunk', { text: 'ce today. And' });
  const first = (await c.until('audio-chunk')).at - t0;
  c.send('synthesize-chunk', { text: ' more.' });
  c.send('synthesize-stop');
  await c.until('synthesize-stopped');
  c.close();
  return first;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// Warm both paths and the engines.
await httpFirstByte(TEXT);
await wyomingFirstChunk(TEXT);
const tts = { http: [], wyoming: [], streamed: [], sentence: [] };
for (let i = 0; i < ROUNDS; i++) {
  tts.http.push(await httpFirstByte(TEXT));
  tts.wyoming.push(await wyomingFirstChunk(TEXT));
  tts.streamed.push(await streamedFirstChunk());
  tts.sentence.push(await wyomingFirstChunk(FIRST));
}

// 5 s of speech for the transcriptions: flite's sentence, repeated, as 16 kHz PCM.
const speech = Buffer.from(
  await (
    await fetch(`${base}/v1/audio/speech`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'flite', input: TEXT, response_format: 'pcm', sample_rate: 16000 }),
    })
  ).arrayBuffer(),
).subarray(0, 5 * 16000 * 2);
const wav = Buffer.concat([wavHeader(16000, 1, speech.length), speech]);
async function httpTranscribe() {
  const form = new FormData();
  form.set('model', 'asr');
  form.set('file', new Blob([wav], { type: 'audio/wav' }), 'a.wav');
  const res = await fetch(`${base}/v1/audio/transcriptions`, { method: 'POST', body: form });
  await res.text();
}
async function wyomingTranscribe() {
  const c = await wyoming();
  const format = { rate: 16000, width: 2, channels: 1 };
  c.send('transcribe', { name: 'asr' });
  c.send('audio-start', format);
  for (let at = 0; at < speech.length; at += 3200)
    c.send('audio-chunk', format, speech.subarray(at, at + 3200));
  c.send('audio-stop');
  await c.until('transcript');
  c.close();
}
async function rate(run, concurrency, count) {
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < count) await run();
    }),
  );
  return count / ((performance.now() - t0) / 1000);
}
await httpTranscribe();
await wyomingTranscribe();
const asr = [];
for (const concurrency of [1, 2]) {
  const count = 6 * concurrency;
  const h = [];
  const w = [];
  for (let i = 0; i < 2; i++) {
    h.push(await rate(httpTranscribe, concurrency, count));
    w.push(await rate(wyomingTranscribe, concurrency, count));
  }
  asr.push({ concurrency, http: median(h), wyoming: median(w) });
}

console.log(`Rounds: ${ROUNDS}, medians (ms).\n`);
console.log('| synthesis, first audio | HTTP stream_format audio | Wyoming synthesize | difference |');
console.log('|---|---:|---:|---:|');
console.log(
  `| flite, 20 words | ${median(tts.http).toFixed(1)} | ${median(tts.wyoming).toFixed(1)} | ${(median(tts.wyoming) - median(tts.http)).toFixed(1)} |`,
);
console.log(
  `\n| streamed synthesis | first sentence's last chunk → first audio-chunk | the sentence alone (synthesize → first audio-chunk) | difference |`,
);
console.log('|---|---:|---:|---:|');
console.log(
  `| flite, "${FIRST}" | ${median(tts.streamed).toFixed(1)} | ${median(tts.sentence).toFixed(1)} | ${(median(tts.streamed) - median(tts.sentence)).toFixed(1)} |`,
);
console.log(
  '\n| transcription of 5 s (pocketsphinx, 2 slots) | HTTP multipart /s | Wyoming /s | Wyoming / HTTP |',
);
console.log('|---|---:|---:|---:|');
for (const r of asr)
  console.log(
    `| concurrency ${r.concurrency} | ${r.http.toFixed(2)} | ${r.wyoming.toFixed(2)} | ${(r.wyoming / r.http).toFixed(3)} |`,
  );
process.exit(0);
