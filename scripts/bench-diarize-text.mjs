// Benchmark of issue 39 item 6 on `voxd serve` child processes with the embedded engines: what the
// text of a diarization (gpt-4o-transcribe-diarize: the diarizer with diarization_text_model's
// words, both run at once) costs against the diarizer alone and pocketsphinx alone, on flite's
// speech of the bench sentence; and what minting an ephemeral realtime key costs
// (POST /v1/realtime/client_secrets, one at a time, up to the cap).
// Not a test: it prints Markdown for docs/performance.md.
// Usage: npm run build && node scripts/bench-diarize-text.mjs [--runs=10] [--mints=1000]

import { SENTENCE, startServeChild } from './bench-server.mjs';

const args = process.argv.slice(2);
const opt = (name, fallback) => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback;
const RUNS = Number(opt('runs', '10'));
const MINTS = Number(opt('mints', '1000'));

const MODELS = [
  { id: 'flite', family: 'flite_tts', task: 'tts' },
  { id: 'pocketsphinx', family: 'pocketsphinx_asr', task: 'asr' },
  { id: 'diarizer', family: 'classic_diar', task: 'diar' },
];

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function speak(base) {
  const res = await fetch(`${base}/v1/audio/speech`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'flite', input: SENTENCE, voice: 'kal16' }),
  });
  if (res.status !== 200) throw new Error(`flite: ${res.status}`);
  return Buffer.from(await res.arrayBuffer());
}

/** Median wall time of RUNS transcriptions of `wav` by `model`, after one warm-up, and the last text. */
async function timeTranscription(base, model, wav) {
  const once = async () => {
    const form = new FormData();
    form.set('model', model);
    form.set('file', new Blob([wav]), 'a.wav');
    const started = performance.now();
    const res = await fetch(`${base}/v1/audio/transcriptions`, { method: 'POST', body: form });
    const json = await res.json();
    if (res.status !== 200) throw new Error(`${model}: ${res.status} ${JSON.stringify(json)}`);
    return { ms: performance.now() - started, text: json.text };
  };
  await once();
  const times = [];
  let text = '';
  for (let i = 0; i < RUNS; i++) {
    const run = await once();
    times.push(run.ms);
    text = run.text;
  }
  return { ms: median(times), text };
}

async function metric(base, name) {
  const text = await (await fetch(`${base}/metrics`)).text();
  return Number(text.match(new RegExp(`^${name} (\\S+)$`, 'm'))?.[1] ?? Number.NaN);
}

const paired = await startServeChild({ models: MODELS, max_client_secrets: MINTS });
const alone = await startServeChild({ models: MODELS, diarization_text_model: '' });
const wav = await speak(paired.base);
const rows = [
  ['pocketsphinx alone', await timeTranscription(paired.base, 'pocketsphinx', wav)],
  ['diarizer alone (`diarization_text_model: ""`)', await timeTranscription(alone.base, 'diarizer', wav)],
  [
    '`gpt-4o-transcribe-diarize` (diarizer + pocketsphinx at once)',
    await timeTranscription(paired.base, 'gpt-4o-transcribe-diarize', wav),
  ],
];
alone.child.kill('SIGKILL');

console.log(
  `Transcriptions of flite's ${(wav.length / 32000).toFixed(1)} s WAV, median of ${RUNS} after a warm-up:\n`,
);
console.log('| model | median ms | text |');
console.log('|---|---|---|');
for (const [label, { ms, text }] of rows)
  console.log(`| ${label} | ${ms.toFixed(0)} | ${JSON.stringify(text)} |`);

const times = [];
for (let i = 0; i < MINTS; i++) {
  const started = performance.now();
  const res = await fetch(`${paired.base}/v1/realtime/client_secrets`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      session: { type: 'transcription', audio: { input: { transcription: { model: 'pocketsphinx' } } } },
    }),
  });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`mint ${i}: ${res.status}`);
  times.push(performance.now() - started);
}
const full = await fetch(`${paired.base}/v1/realtime/client_secrets`, {
  method: 'POST',
  body: '{}',
  headers: { 'content-type': 'application/json' },
});
console.log(
  `\n${MINTS} mints one at a time: median ${median(times).toFixed(2)} ms, p99 ${[...times].sort((a, b) => a - b)[Math.floor(times.length * 0.99)].toFixed(2)} ms; voxd_client_secrets ${await metric(paired.base, 'voxd_client_secrets')}; the next mint ${full.status}.`,
);
paired.child.kill('SIGKILL');
process.exit(0);
