// What the server adds to an engine: flite speech and silero-vad detection driven with no server
// (the engine family's own sessions, each in its runner process as voxd runs them, N requests in
// flight on N sessions) against the same engine through voxd's HTTP API (N slots, N requests in
// flight, keep-alive), at N = 1 and 2, interleaved in one run. Prints a Markdown table for
// docs/performance.md.
// Usage: npm run build && node scripts/bench-raw-engine.mjs [seconds-per-round] [--rounds=N]
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeWav } from '../dist/src/audio/wav-decode.js';
import { createEngineCatalog } from '../dist/src/engines/catalog.js';
import { SENTENCE, startBenchServer } from './bench-server.mjs';

const args = process.argv.slice(2);
const SECONDS = Number(args.find((a) => /^\d+$/.test(a)) ?? 4);
const ROUNDS = Number(args.find((a) => a.startsWith('--rounds='))?.slice(9) ?? 3);
const dir = mkdtempSync(join(tmpdir(), 'voxd-bench-raw-'));

const startServer = (models) => startBenchServer(dir, models);

function post(agent, url, body) {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', agent, headers: { 'content-type': 'application/json' } },
      (res) => {
        const parts = [];
        res.on('data', (d) => parts.push(d));
        res.on('end', () =>
          res.statusCode === 200 ? resolve(Buffer.concat(parts)) : reject(new Error(`${res.statusCode}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

/** Requests completed per second with `inFlight` callers each looping `once` for SECONDS. */
async function closedLoop(inFlight, once) {
  const end = performance.now() + SECONDS * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async (_, i) => {
      while (performance.now() < end) {
        await once(i);
        done++;
      }
    }),
  );
  return done / SECONDS;
}

// The VAD's input: the sentence spoken by flite, at 16 kHz.
const speaker = await startServer([{ id: 'flite', family: 'flite_tts', task: 'tts' }]);
const wav = await post(new Agent(), `${speaker.url}/v1/audio/speech`, { model: 'flite', input: SENTENCE });
await speaker.close();
const audio = decodeWav(wav);

const ENGINES = [
  {
    id: 'flite',
    family: 'flite_tts',
    task: 'tts',
    route: '/v1/audio/speech',
    body: { model: 'flite', input: SENTENCE },
    request: { task: 'tts', text: SENTENCE, options: {} },
  },
  {
    id: 'silero-vad',
    family: 'silero_vad',
    task: 'vad',
    route: '/v1/tasks/run',
    body: { model: 'silero-vad', audio_base64: wav.toString('base64') },
    request: { task: 'vad', audio, options: {} },
  },
];

const catalog = createEngineCatalog();
const rows = [];
for (const engine of ENGINES) {
  for (const n of [1, 2]) {
    // No server: the family's weights and n sessions, called directly.
    const family = catalog.get(engine.family);
    const spec = {
      modelId: engine.id,
      path: '',
      task: engine.task,
      mode: 'offline',
      loadOptions: {},
      backend: 'cpu',
      device: 0,
      threads: 1,
      // A runner per session, as voxd runs these families (they cannot share an engine).
      isolation: 'session',
    };
    const weights = await family.load(spec, new AbortController().signal);
    const sessions = [];
    for (let i = 0; i < n; i++) sessions.push(await weights.createSession({ index: i, sessionOptions: {} }));
    const signal = new AbortController().signal;
    const raw = (i) => sessions[i].run(engine.request, { signal });
    await Promise.all(sessions.map((_, i) => raw(i)));
    // Through voxd: n slots, n requests in flight over keep-alive connections.
    const voxd = await startServer([{ id: engine.id, family: engine.family, task: engine.task, slots: n }]);
    const agent = new Agent({ keepAlive: true, maxSockets: n });
    const url = `${voxd.url}${engine.route}`;
    const served = () => post(agent, url, engine.body);
    await Promise.all(Array.from({ length: n }, served));
    const runs = { raw: [], voxd: [] };
    for (let r = 0; r < ROUNDS; r++) {
      runs.raw.push(await closedLoop(n, raw));
      runs.voxd.push(await closedLoop(n, served));
    }
    const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
    rows.push({ engine: engine.id, n, raw: median(runs.raw), voxd: median(runs.voxd), runs });
    console.error(JSON.stringify(rows.at(-1)));
    agent.destroy();
    await voxd.close();
    for (const session of sessions) await session.dispose();
    await weights.dispose();
  }
}
console.log(
  '| engine | slots = requests in flight | raw engine (requests/s) | through voxd (requests/s) | voxd / raw | rounds raw; voxd |',
);
console.log('|---|---:|---:|---:|---:|---|');
for (const r of rows)
  console.log(
    `| ${r.engine} | ${r.n} | ${r.raw.toFixed(1)} | ${r.voxd.toFixed(1)} | ${(r.voxd / r.raw).toFixed(2)} | ${r.runs.raw.map((x) => x.toFixed(1)).join(', ')}; ${r.runs.voxd.map((x) => x.toFixed(1)).join(', ')} |`,
  );
rmSync(dir, { recursive: true, force: true });
