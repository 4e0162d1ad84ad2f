// Issue 39, item 7: how long a realtime session that commits by hand waits for its transcript.
// One `voxd serve` child with pocketsphinx (one slot): a session appends LibriVox clip 0880 (3.0 s
// of speech, "he was not an ill disposed young man") in 100 ms pieces at real time, then commits;
// measured from the commit to the completed event. pocketsphinx hears the buffer as it is appended
// (a live turn), so the commit waits only for the last step. Beside it, the same clip as a plain
// HTTP transcription: the whole search a commit waited for before. Not a test: it prints Markdown
// for docs/performance.md.
// Usage: npm run build && node scripts/bench-realtime-commit.mjs [--runs=10]

import { readFileSync } from 'node:fs';
import { WebSocket } from 'ws';
import { startServeChild } from './bench-server.mjs';

const args = process.argv.slice(2);
const RUNS = Number(args.find((a) => a.startsWith('--runs='))?.split('=')[1] ?? '10');
const CLIP = '/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-0880.wav';
const wav = readFileSync(CLIP);
const pcm = wav.subarray(44);
const PIECE = 3200; // 100 ms of PCM16 at 16 kHz

const { base, child } = await startServeChild({
  models: [{ id: 'asr', family: 'pocketsphinx_asr', task: 'asr' }],
});
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** One manual-commit turn at real time: ms from the commit to the completed event, and the text. */
async function turn() {
  const ws = new WebSocket(`${base.replace('http', 'ws')}/v1/realtime?model=asr`);
  const events = [];
  let wake = () => {};
  ws.on('message', (data) => {
    events.push(JSON.parse(data.toString()));
    wake();
  });
  const next = async (type) => {
    for (;;) {
      const found = events.find((e) => e.type === type || e.type === 'error');
      if (found) {
        if (found.type === 'error') throw new Error(JSON.stringify(found));
        events.splice(events.indexOf(found), 1);
        return found;
      }
      await new Promise((r) => (wake = r));
    }
  };
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  ws.send(
    JSON.stringify({
      type: 'session.update',
      session: {
        type: 'transcription',
        audio: { input: { format: { type: 'audio/pcm', rate: 16000 }, turn_detection: null } },
      },
    }),
  );
  await next('session.updated');
  const start = performance.now();
  for (let k = 0; k * PIECE < pcm.length; k++) {
    await sleep(Math.max(0, start + k * 100 - performance.now()));
    const piece = pcm.subarray(k * PIECE, (k + 1) * PIECE);
    ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: piece.toString('base64') }));
  }
  // The last piece is sent when its 100 ms begin: the commit comes when they end, as a client's would.
  await sleep(Math.max(0, start + (pcm.length / PIECE) * 100 - performance.now()));
  const committedAt = performance.now();
  ws.send(JSON.stringify({ type: 'input_audio_buffer.commit' }));
  const completed = await next('conversation.item.input_audio_transcription.completed');
  const ms = performance.now() - committedAt;
  ws.close();
  return { ms, text: completed.transcript };
}

/** The plain HTTP transcription of the clip: the whole search. */
async function plain() {
  const form = new FormData();
  form.append('file', new Blob([wav], { type: 'audio/wav' }), 'clip.wav');
  form.append('model', 'asr');
  const at = performance.now();
  const res = await fetch(`${base}/v1/audio/transcriptions`, { method: 'POST', body: form });
  const text = (await res.json()).text;
  return { ms: performance.now() - at, text };
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

await turn(); // the model loads
const turns = [];
const plains = [];
for (let i = 0; i < RUNS; i++) {
  turns.push(await turn());
  plains.push(await plain());
}
const live = turns.map((t) => t.ms);
const whole = plains.map((t) => t.ms);
console.log('| 3.0 s of speech (LibriVox 0880), pocketsphinx | median ms | p90 ms | max ms |');
console.log('|---|---:|---:|---:|');
console.log(
  `| realtime, manual commit at real time: commit → completed | ${pct(live, 50).toFixed(0)} | ${pct(live, 90).toFixed(0)} | ${Math.max(...live).toFixed(0)} |`,
);
console.log(
  `| the whole search of the same clip (HTTP plain transcription) | ${pct(whole, 50).toFixed(0)} | ${pct(whole, 90).toFixed(0)} | ${Math.max(...whole).toFixed(0)} |`,
);
console.log(`\n${RUNS} runs each, alternating. Heard live: "${turns[0].text}"; whole: "${plains[0].text}"`);
child.kill('SIGTERM');
