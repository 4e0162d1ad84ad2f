// First byte of a speech answer as the openai SDK sees it (issue 39, item 2): the SDK's default
// call (`audio.speech.create`, mp3, no stream_format) against the streamed baseline
// (`stream_format: "audio"`, pcm), 4 sentences of flite, with the other plain formats and the
// whole-answer opt-out (`stream: false`) beside them. The requests take turns within each round,
// so every path sees the same load; the medians of the rounds are printed as Markdown for
// docs/performance.md.
// Usage: npm run build && node scripts/bench-speech-first-byte.mjs [--rounds=N]
import OpenAI from 'openai';
import { startServeChild } from './bench-server.mjs';

const args = process.argv.slice(2);
const ROUNDS = Number(args.find((a) => a.startsWith('--rounds='))?.slice(9) ?? 9);
const INPUT =
  'The quick brown fox jumps over the lazy dog. Seven happy children watch from the old wooden bridge. ' +
  'The weather is nice today, so we walk along the river. Please call me tomorrow morning before nine.';

const { base, child } = await startServeChild({
  models: [{ id: 'flite', family: 'flite_tts', task: 'tts', mode: 'streaming' }],
});
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'sk-none', maxRetries: 0 });

// The mp3 requests are spread out, so each finds the spare encoder its predecessor's exit started
// (src/audio/ffmpeg-spares.ts), as a client that asks one request after another does. The cold
// row asks for a sample_rate no request asked for before, for which no spare can be waiting: the
// first byte when ffmpeg must start (plus resampling 16 kHz to about 22 kHz).
const PATHS = {
  'SDK, `stream_format: "audio"`, pcm (baseline)': { response_format: 'pcm', stream_format: 'audio' },
  'SDK default call: mp3, no `stream_format`': { response_format: 'mp3' },
  'SDK, pcm, no `stream_format`': { response_format: 'pcm' },
  'SDK, mp3, `stream_format: "audio"`': { response_format: 'mp3', stream_format: 'audio' },
  'SDK, wav, no `stream_format`': { response_format: 'wav' },
  'SDK, mp3, a new `sample_rate` each time (cold: no spare encoder)': { response_format: 'mp3', cold: true },
  'SDK, opus, no `stream_format`': { response_format: 'opus' },
  'SDK, mp3, `stream: false` (whole answer)': { response_format: 'mp3', stream: false },
};

/** Milliseconds from the call to its first body byte and to its last, and the byte count. */
let coldRate = 22_050;
async function once({ cold, ...extra }) {
  if (cold) extra.sample_rate = coldRate++;
  const started = performance.now();
  const res = await client.audio.speech.create({ model: 'flite', voice: 'alloy', input: INPUT, ...extra });
  const reader = res.body.getReader();
  let first;
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    first ??= performance.now() - started;
    bytes += value.length;
  }
  return { first, last: performance.now() - started, bytes };
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const runs = Object.fromEntries(Object.keys(PATHS).map((name) => [name, []]));
// One warm-up round: the model's first load and ffmpeg's first start are not what is measured.
for (const extra of Object.values(PATHS)) await once(extra);
// Each round starts one path later, so no path always follows the same one (an mp3 answer's ffmpeg
// exits, and its spare starts, as the next request begins).
const entries = Object.entries(PATHS);
for (let round = 0; round < ROUNDS; round++)
  for (let i = 0; i < entries.length; i++) {
    const [name, extra] = entries[(i + round) % entries.length];
    runs[name].push(await once(extra));
  }

const baseline = median(runs[Object.keys(PATHS)[0]].map((r) => r.first));
console.log(`flite, 4 sentences (${INPUT.length} characters), ${ROUNDS} rounds, medians\n`);
console.log('| request | first byte | last byte | bytes | first byte / baseline |');
console.log('|---|---|---|---|---|');
for (const [name, list] of Object.entries(runs)) {
  const first = median(list.map((r) => r.first));
  const last = median(list.map((r) => r.last));
  console.log(
    `| ${name} | ${first.toFixed(0)} ms | ${last.toFixed(0)} ms | ${median(list.map((r) => r.bytes))} | ${(first / baseline).toFixed(2)}x |`,
  );
}
child.kill('SIGKILL');
