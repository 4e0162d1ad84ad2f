// `/v1/listen` end of speech to `speech_final` (issue 41: "speech_final within the endpointing window
// plus 150 ms of the end of speech"). A `voxd serve` child (pocketsphinx, silero-vad), warmed; for
// each `endpointing` value one Deepgram socket (linear16, 16 kHz, interim results on) is fed the five
// LibriVox clips of Debian's pocketsphinx-testdata, 2 s of silence after each, at real time in 20 ms
// frames, each frame sent when its last sample has been spoken (as a microphone delivers it). For
// each clip: from the moment its last voiced sample was spoken (known from the clip) to the arrival
// of the speech_final Results whose audio reaches it. Repeated --runs times; p50/p95/max per value,
// against the window voxd applies (endpointing floored at 200 ms) plus 150 ms. Not a test: it prints
// Markdown for docs/performance.md.
// Usage: npm run build && node scripts/bench-listen.mjs [--runs=3] [--endpointing=25,300,500,1000]
import { setTimeout as sleep } from 'node:timers/promises';
import { WebSocket } from 'ws';
import { ENDPOINTING_FLOOR_MS } from '../dist/src/http/deepgram/listen/options.js';
import { RATE, spoken } from '../dist/test/helpers/deepgram-listen.js';
import { librivoxWav } from '../dist/test/helpers/librivox.js';
import { startServeChild } from './bench-server.mjs';

const arg = (name, fallback) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const RUNS = Number(arg('runs', '3'));
const VALUES = arg('endpointing', '25,300,500,1000').split(',').map(Number);
const FRAME_MS = 20;
const CLIPS = ['0870', '0880', '0890', '0920', '0930'];

const { base, child } = await startServeChild({
  models: [
    { id: 'pocketsphinx', family: 'pocketsphinx_asr', task: 'asr', mode: 'streaming' },
    { id: 'silero-vad', family: 'silero_vad', task: 'vad' },
  ],
});

// Warm both models: a load is not what is measured.
{
  const form = new FormData();
  form.set('model', 'pocketsphinx');
  form.set('file', new Blob([librivoxWav('0880')]), 'warm.wav');
  form.set('chunking_strategy', 'auto');
  const res = await fetch(`${base}/v1/audio/transcriptions`, { method: 'POST', body: form });
  if (res.status !== 200) throw new Error(`warm-up: ${res.status} ${await res.text()}`);
}

/** One socket over the clips at real time: the latency of each clip's speech_final, in ms. */
async function run(endpointing) {
  const clip = spoken(CLIPS, { leadMs: 500, pauseMs: 2000, tailMs: 2000 });
  const url = `${base.replace(/^http/, 'ws')}/v1/listen?encoding=linear16&sample_rate=${RATE}&interim_results=true&endpointing=${endpointing}`;
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  const finals = [];
  ws.on('message', (data) => {
    const m = JSON.parse(data.toString());
    if (m.type === 'Results' && m.speech_final) finals.push({ at: performance.now(), start: m.start });
  });
  const frameBytes = (RATE / 1000) * FRAME_MS * 2;
  const started = performance.now();
  for (let at = 0; at < clip.pcm.length; at += frameBytes) {
    const end = Math.min(clip.pcm.length, at + frameBytes);
    const due = started + (end / 2 / RATE) * 1000 - performance.now();
    if (due > 0) await sleep(due);
    ws.send(clip.pcm.subarray(at, end));
  }
  ws.send(JSON.stringify({ type: 'CloseStream' }));
  await new Promise((resolve) => ws.once('close', resolve));
  // A clip's speech_final is the last one of an utterance that began before its speech ended (and
  // after the clip before it): silero may end the utterance before the clip's last voiced sample
  // (a quiet tail it does not call speech), and the latency is then less than the window.
  return clip.speechEndsMs.map((endMs, k) => {
    const after = k === 0 ? 0 : clip.speechEndsMs[k - 1];
    const own = finals.filter((f) => f.start * 1000 < endMs && f.start * 1000 > after);
    const final = own.at(-1);
    return final ? final.at - (started + endMs) : Number.NaN;
  });
}

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

console.log(
  `/v1/listen, pocketsphinx (streaming) + silero-vad, the five LibriVox clips 2 s apart at real time in ${FRAME_MS} ms frames, ${RUNS} run(s) per value: end of speech (the clip's last voiced sample spoken) to the speech_final Results.\n`,
);
console.log(
  '| endpointing | window applied | utterances | missed | p50 ms | p95 ms | max ms | bound (window + 150) | within |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
for (const value of VALUES) {
  const all = [];
  for (let r = 0; r < RUNS; r++) all.push(...(await run(value)));
  const got = all.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  const window = Math.max(ENDPOINTING_FLOOR_MS, value);
  const bound = window + 150;
  const [p50, p95, max] = [pct(got, 50), pct(got, 95), got.at(-1)];
  console.log(
    `| ${value} | ${window} | ${all.length} | ${all.length - got.length} | ${p50.toFixed(0)} | ${p95.toFixed(0)} | ${max.toFixed(0)} | ${bound} | ${p95 <= bound ? 'yes' : p50 <= bound ? 'p50 only' : 'no'} |`,
  );
}
child.kill();
process.exit(0);
