// Server-VAD turns across many runs (issue 39, item 5: "Across 20 runs with LiveKit's and OpenAI's VAD
// defaults, no two turns share audio"). A `voxd serve` child (flite, pocketsphinx, silero-vad) and,
// in this process, LiveKit Agents' realtime STT (@livekit/agents-plugin-openai 1.9.0, its defaults:
// prefix 600 ms, silence 350 ms; read through a recording relay) and a raw realtime socket with the
// openai SDK's session.update (OpenAI's 300/500), each over LibriVox 0880 and three flite sentences
// 650 ms apart, RUNS times, at real time and then as fast as the socket takes the audio. For each
// client, clip and pace: the turns per run, the runs where a turn started inside the previous turn's
// audio (speech_stopped + silence window), the smallest margin between turns, the boundary words
// repeated, and how many different turn layouts the runs gave. Not a test: it prints Markdown for
// docs/performance.md. The helpers are test/helpers/realtime-turns.ts, as the test uses them.
// Usage: npm run build && node scripts/bench-vad-turns.mjs [--runs=20] [--pace=paced|fast|both]
import {
  fliteSentences,
  LIVEKIT_DEFAULTS,
  libri0880,
  liveKitTurns,
  OPENAI_DEFAULTS,
  overlapsOf,
  rawTurns,
  repeatsOf,
  startTap,
} from '../dist/test/helpers/realtime-turns.js';
import { startServeChild } from './bench-server.mjs';

const RUNS = Number(process.argv.find((a) => a.startsWith('--runs='))?.slice(7) ?? 20);
const PACE = process.argv.find((a) => a.startsWith('--pace='))?.slice(7) ?? 'both';
const PACES = PACE === 'both' ? [true, false] : [PACE === 'paced'];

const { base, child } = await startServeChild({
  models: [
    { id: 'flite', family: 'flite_tts', task: 'tts' },
    { id: 'pocketsphinx', family: 'pocketsphinx_asr', task: 'asr', mode: 'streaming' },
    { id: 'silero-vad', family: 'silero_vad', task: 'vad' },
  ],
});
const clips = [
  libri0880(),
  await fliteSentences(
    base,
    ['Please call me tomorrow morning.', 'The weather is nice today.', 'Turn on the kitchen lights.'],
    650,
  ),
];
const clients = [
  {
    name: 'LiveKit 1.9 realtime STT (600/350)',
    silence: LIVEKIT_DEFAULTS.silence,
    turns: async (clip, paced) => {
      const tap = await startTap(base);
      try {
        return await liveKitTurns(tap, clip, paced);
      } finally {
        await tap.close();
      }
    },
  },
  {
    name: 'raw socket, OpenAI defaults (300/500)',
    silence: OPENAI_DEFAULTS.silence,
    turns: (clip, paced) => rawTurns(base, clip, paced),
  },
];

const rows = [];
const layoutsByPace = new Map();
for (const paced of PACES)
  for (const client of clients)
    for (const clip of clips) {
      let overlapping = 0;
      let margin = Infinity;
      const counts = new Map();
      const layouts = new Map();
      const repeats = [];
      for (let run = 0; run < RUNS; run++) {
        const turns = await client.turns(clip, paced);
        if (overlapsOf(turns, client.silence).length > 0) overlapping++;
        for (let n = 1; n < turns.length; n++)
          margin = Math.min(margin, turns[n].start - (turns[n - 1].end + client.silence));
        counts.set(turns.length, (counts.get(turns.length) ?? 0) + 1);
        const layout = turns.map((t) => `${t.start}-${t.end}`).join(' ');
        layouts.set(layout, (layouts.get(layout) ?? 0) + 1);
        repeats.push(...repeatsOf(turns));
        process.stderr.write(
          `${paced ? 'paced' : 'fast'} ${client.name} ${clip.name} run ${run + 1}: ${turns.map((t) => `[${t.start}-${t.end}] "${t.transcript}"`).join(' ')}\n`,
        );
      }
      layoutsByPace.set(`${paced}|${client.name}|${clip.name}`, layouts);
      rows.push({
        pace: paced ? 'real time' : 'fast',
        client: client.name,
        clip: clip.name,
        turns: [...counts]
          .sort((a, b) => a[0] - b[0])
          .map(([n, runs]) => `${n} turns × ${runs}`)
          .join(', '),
        overlapping,
        margin: margin === Infinity ? '—' : `${margin} ms`,
        repeats: repeats.length === 0 ? 'none' : repeats.join('; '),
        layouts: layouts.size,
        common: [...layouts].sort((a, b) => b[1] - a[1])[0][0],
      });
    }

console.log(`${RUNS} runs per row; voxd serve --parallel-jobs (child process), Node ${process.version}\n`);
console.log(
  "| pace | client | clip | turns per run | runs with shared audio | smallest gap after a turn's audio | boundary word repeated | turn layouts | most common layout (ms) |",
);
console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
for (const r of rows)
  console.log(
    `| ${r.pace} | ${r.client} | ${r.clip} | ${r.turns} | ${r.overlapping} of ${RUNS} | ${r.margin} | ${r.repeats} | ${r.layouts} | ${r.common} |`,
  );
if (PACES.length === 2) {
  console.log('\nLayouts seen at real time and also when sent fast:');
  for (const client of clients)
    for (const clip of clips) {
      const paced = layoutsByPace.get(`true|${client.name}|${clip.name}`);
      const fast = layoutsByPace.get(`false|${client.name}|${clip.name}`);
      const shared = [...fast.keys()].filter((l) => paced.has(l)).length;
      console.log(
        `- ${client.name}, ${clip.name}: ${shared} of ${fast.size} fast layouts also came at real time`,
      );
    }
}
child.kill();
process.exit(0);
