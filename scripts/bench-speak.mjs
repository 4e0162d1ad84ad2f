// Deepgram's streaming TTS socket, /v1/speak, against the engine's own time (issue 41). Text is sent
// word by word as a language model writes it; measured, per engine (flite, espeak, festival; those
// that load here):
//  - first audio: from the Speak that completes the first clause (the word after its comma) to the
//    first audio byte at the client, against the engine's own time for that clause (its session's
//    run called directly, no server, as bench-raw-engine.mjs calls it);
//  - flush: from the Flush to the last audio byte (the Flushed after it), against the engine's own
//    time for the rest of the text (the sentence the Flush completes) and for clause and rest (the
//    words are sent at once, so the clause is still being made when the Flush comes);
//  - clear: from a Clear sent once the first audio of a long text arrived to the Cleared (after which
//    no audio comes: the tests check that), and to the slot freed.
// Runs interleave the raw engine and voxd. Prints a Markdown table for docs/performance.md.
// Usage: npm run build && node scripts/bench-speak.mjs [runs] [--engines=flite,espeak,festival]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { loadAlone, startBenchServer } from './bench-server.mjs';

const args = process.argv.slice(2);
const RUNS = Number(args.find((a) => /^\d+$/.test(a)) ?? 30);
const ENGINES = (args.find((a) => a.startsWith('--engines='))?.slice(10) ?? 'flite,espeak,festival').split(
  ',',
);
const FAMILIES = { flite: 'flite_tts', espeak: 'espeak_tts', festival: 'festival_tts' };
const CLAUSE = 'The quick brown fox jumps over the lazy dog,';
const REST = 'while seven happy children watch from the old wooden bridge today.';
/** The words as a model streams them: each with its leading space. */
const WORDS = `${CLAUSE} ${REST}`.split(' ').map((w, i) => (i === 0 ? w : ` ${w}`));
/** The word whose arrival completes the first clause (the one after "dog,"). */
const CLAUSE_DONE = CLAUSE.split(' ').length;
const LONG = `${REST} `.repeat(12);

const dir = mkdtempSync(join(tmpdir(), 'voxd-bench-speak-'));

/** The engine's own session, with no server: its run time for `text`. */
async function rawEngine(family) {
  const {
    weights,
    sessions: [session],
  } = await loadAlone(family, 'raw', 'tts');
  const signal = new AbortController().signal;
  return {
    async time(text) {
      const start = performance.now();
      await session.run({ task: 'tts', text, options: {} }, { signal });
      return performance.now() - start;
    },
    async close() {
      await session.dispose();
      await weights.dispose();
    },
  };
}

/** One socket: frames timed as they arrive. */
function open(url) {
  const ws = new WebSocket(
    `${url.replace(/^http/, 'ws')}/v1/speak?model=m&encoding=linear16&sample_rate=24000`,
  );
  const frames = [];
  let wake = () => {};
  ws.on('message', (data, binary) => {
    frames.push({ at: performance.now(), type: binary ? 'audio' : JSON.parse(data.toString()).type });
    wake();
  });
  const until = (test) =>
    new Promise((resolve) => {
      const look = () => {
        const found = frames.find(test);
        if (found) resolve(found);
      };
      wake = look;
      look();
    });
  return new Promise((resolve, reject) => {
    ws.on('open', () =>
      resolve({ ws, frames, until, speak: (text) => ws.send(JSON.stringify({ type: 'Speak', text })) }),
    );
    ws.on('error', reject);
  });
}

async function streamed(url) {
  const c = await open(url);
  await c.until((f) => f.type === 'Metadata');
  let clauseAt = 0;
  for (const [i, word] of WORDS.entries()) {
    c.speak(word);
    if (i === CLAUSE_DONE) clauseAt = performance.now();
  }
  const flushAt = performance.now();
  c.ws.send(JSON.stringify({ type: 'Flush' }));
  const first = await c.until((f) => f.type === 'audio' && f.at >= clauseAt);
  const flushed = await c.until((f) => f.type === 'Flushed');
  const last = c.frames.filter((f) => f.type === 'audio').at(-1);
  c.ws.close();
  return { first: first.at - clauseAt, flush: last.at - flushAt, flushed: flushed.at - flushAt };
}

async function cleared(voxd, url) {
  const c = await open(url);
  await c.until((f) => f.type === 'Metadata');
  c.speak(LONG);
  c.ws.send(JSON.stringify({ type: 'Flush' }));
  await c.until((f) => f.type === 'audio');
  const at = performance.now();
  c.ws.send(JSON.stringify({ type: 'Clear' }));
  const done = await c.until((f) => f.type === 'Cleared');
  const model = () => voxd.runtime.snapshots().find((m) => m.id === 'm');
  while (model().activeSlots > 0) await new Promise((resolve) => setImmediate(resolve));
  const freed = performance.now() - at;
  c.ws.close();
  return { clear: done.at - at, freed };
}

const pct = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};
const f1 = (v) => v.toFixed(1);

const rows = [];
for (const name of ENGINES) {
  const family = FAMILIES[name];
  let raw;
  try {
    raw = await rawEngine(family);
    await raw.time(CLAUSE);
  } catch (err) {
    console.error(`${name}: not measured (${err.message})`);
    continue;
  }
  const voxd = await startBenchServer(dir, [{ id: 'm', family, task: 'tts' }]);
  await streamed(voxd.url);
  const m = { rawClause: [], rawRest: [], first: [], flush: [], clear: [], freed: [], afterClear: [] };
  for (let i = 0; i < RUNS; i++) {
    m.rawClause.push(await raw.time(CLAUSE));
    m.rawRest.push(await raw.time(REST));
    const s = await streamed(voxd.url);
    m.first.push(s.first);
    m.flush.push(s.flush);
  }
  // A Clear cancels the run in progress; the next utterance's first audio is timed too.
  for (let i = 0; i < RUNS; i++) {
    const c = await cleared(voxd, voxd.url);
    m.clear.push(c.clear);
    m.freed.push(c.freed);
    m.afterClear.push((await streamed(voxd.url)).first);
  }
  await voxd.close();
  await raw.close();
  const row = { name, m };
  rows.push(row);
  console.error(
    JSON.stringify({
      name,
      ...Object.fromEntries(Object.entries(m).map(([k, v]) => [k, [f1(pct(v, 50)), f1(pct(v, 95))]])),
    }),
  );
}
console.log(
  '| engine | engine: first clause (p50 / p95 ms) | voxd: clause-completing Speak -> first audio byte (p50 / p95) | first audio minus engine (p50) | engine: rest of the text | engine: clause + rest (p50) | voxd: Flush -> last audio byte (p50 / p95) | Clear -> Cleared (p50 / p95) | Clear -> slot free (p50 / p95) | first audio of the next text after a Clear (p50 / p95) |',
);
console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
const both = (v) => `${f1(pct(v, 50))} / ${f1(pct(v, 95))}`;
for (const { name, m } of rows)
  console.log(
    `| ${name} | ${both(m.rawClause)} | ${both(m.first)} | ${f1(pct(m.first, 50) - pct(m.rawClause, 50))} | ${both(m.rawRest)} | ${f1(pct(m.rawClause, 50) + pct(m.rawRest, 50))} | ${both(m.flush)} | ${both(m.clear)} | ${both(m.freed)} | ${both(m.afterClear)} |`,
  );
console.log(
  `\n${RUNS} runs per engine: raw clause, raw rest and one voxd socket interleaved; then ${RUNS} Clears, each followed by one more socket.`,
);
rmSync(dir, { recursive: true, force: true });
