// Benchmark of realtime server VAD (issue 25) on one `voxd serve` child process: N sessions with
// `turn_detection` server_vad (silence_duration_ms 500) stream flite's spoken sentence at real time
// in 100 ms appends (0.5 s of silence, the sentence, 1 s of silence), to pocketsphinx (a streaming
// engine: the turn opens at the start of speech) with silero finding the turns. Measured from the
// client side: from the append that carried the first audio of the speech to the first
// `...transcription.delta`, and from the append that completed the 500 ms silence window after the
// speech to `...transcription.completed` (this includes pocketsphinx's last decode step after the
// end of the audio and voxd's probe). With --engine=fixture the ASR does no work (it answers
// whole, at the commit), so the second figure is voxd's own time after the end of speech: the probe
// that sees the window complete (silero, through its FIFO), the commit and the turn. Starts are
// spread over 2 s. Not a test: it prints Markdown for docs/performance.md.
// Usage: npm run build && node scripts/bench-realtime-vad.mjs [--engine=pocketsphinx|fixture] [sessions...]

import { WebSocket } from 'ws';
import { startServeChild } from './bench-server.mjs';

const ENGINE = process.argv.find((a) => a.startsWith('--engine='))?.split('=')[1] ?? 'pocketsphinx';
const VAD_SLOTS = Number(process.argv.find((a) => a.startsWith('--vad-slots='))?.split('=')[1] ?? 2);
const COUNTS = process.argv
  .slice(2)
  .filter((a) => /^\d+$/.test(a))
  .map(Number);
const SESSIONS = COUNTS.length ? COUNTS : [1, 2, 8];
const RATE = 24000;
const PIECE = RATE / 10; // samples in 100 ms

const { base } = await startServeChild({
  models: [
    ENGINE === 'fixture'
      ? { id: 'asr', family: 'fixture', path: '.', task: 'asr', slots: 4 }
      : { id: 'asr', family: 'pocketsphinx_asr', task: 'asr', slots: 2 },
    { id: 'silero-vad', family: 'silero_vad', task: 'vad', slots: VAD_SLOTS },
    { id: 'flite', family: 'flite_tts', task: 'tts' },
  ],
});
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const speech = Buffer.from(
  await (
    await fetch(`${base}/v1/audio/speech`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        model: 'flite',
        input: 'Please call me tomorrow morning about the weather.',
        response_format: 'pcm',
        sample_rate: RATE,
      }),
    })
  ).arrayBuffer(),
);
const samples = new Int16Array(speech.buffer, speech.byteOffset, speech.length / 2);
let first = 0;
let last = samples.length - 1;
while (Math.abs(samples[first]) < 328) first++;
while (Math.abs(samples[last]) < 328) last--;
const lead = RATE / 2;
const audio = Buffer.concat([Buffer.alloc(lead * 2), speech, Buffer.alloc(RATE * 2)]);
/** The pieces that carry the speech's first sample and complete the 500 ms silence window after it. */
const startPiece = Math.floor((lead + first) / PIECE);
const windowPiece = Math.floor((lead + last + RATE / 2) / PIECE);

/** One session: ms from speech to first delta, and from the end of the silence window to completed. */
async function session(offsetMs) {
  await sleep(offsetMs);
  const ws = new WebSocket(`${base.replace('http', 'ws')}/v1/realtime?model=asr`);
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  const sent = [];
  let firstDelta;
  const done = new Promise((resolve, reject) => {
    ws.on('message', (data) => {
      const e = JSON.parse(data.toString());
      if (e.type === 'conversation.item.input_audio_transcription.delta') firstDelta ??= performance.now();
      if (e.type === 'conversation.item.input_audio_transcription.completed') resolve(performance.now());
      if (e.type === 'error' || e.type.endsWith('.failed')) reject(new Error(JSON.stringify(e)));
    });
  });
  ws.send(
    JSON.stringify({
      type: 'session.update',
      session: { audio: { input: { turn_detection: { type: 'server_vad', silence_duration_ms: 500 } } } },
    }),
  );
  const start = performance.now();
  for (let k = 0; k * PIECE * 2 < audio.length; k++) {
    await sleep(Math.max(0, start + k * 100 - performance.now()));
    ws.send(
      JSON.stringify({
        type: 'input_audio_buffer.append',
        audio: audio.subarray(k * PIECE * 2, (k + 1) * PIECE * 2).toString('base64'),
      }),
    );
    sent[k] = performance.now();
  }
  const completed = await done;
  ws.close();
  return {
    firstDelta: firstDelta - sent[startPiece],
    end: completed - sent[windowPiece],
    lag: await lagP99(),
  };
}

/** prom-client's event-loop lag p99 of the server, in ms. */
async function lagP99() {
  const text = await (await fetch(`${base}/metrics`)).text();
  return 1000 * Number(text.match(/^nodejs_eventloop_lag_p99_seconds (\S+)$/m)?.[1]);
}

const pct = (xs, p) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};
await session(0); // warm: loads pocketsphinx and silero
console.log(
  `Speech ${((last - first) / RATE).toFixed(2)} s; ${ENGINE === 'fixture' ? 'fixture 4 slots' : 'pocketsphinx 2 slots'}, silero ${VAD_SLOTS} slots, server_vad silence 500 ms.\n`,
);
console.log(
  '| sessions | speech start to first delta p50 / p99 (ms) | end of silence window to completed p50 / p99 (ms) | event-loop lag p99 (ms) |',
);
console.log('|---:|---:|---:|---:|');
for (const n of SESSIONS) {
  const results = await Promise.all(Array.from({ length: n }, (_, i) => session((2000 * i) / n)));
  const deltas = results.map((r) => r.firstDelta);
  const ends = results.map((r) => r.end);
  // The fixture answers whole at the commit: its one delta comes after the speech, not during it.
  const firstShown =
    ENGINE === 'fixture' ? '—' : `${pct(deltas, 50).toFixed(0)} / ${pct(deltas, 99).toFixed(0)}`;
  console.log(
    `| ${n} | ${firstShown} | ${pct(ends, 50).toFixed(1)} / ${pct(ends, 99).toFixed(1)} | ${Math.max(...results.map((r) => r.lag)).toFixed(1)} |`,
  );
}
process.exit(0);
