// What voxd adds to an engine, charging voxd only: each engine called directly in its runner
// processes ("alone") against the same engine through voxd's HTTP API, at 1 and 2 requests in flight,
// their rounds interleaved (alone, voxd, alone, voxd, ...). Prints a Markdown table for
// docs/performance.md.
//
// Alone: in this process, the engine family's own weights and N sessions (loadAlone of
// bench-server.mjs, isolation "session": each session in its own runner
// process, as voxd runs these families), N callers each looping session.run(request) on the decoded
// audio for the round's seconds; requests/s = runs completed / seconds.
// Through voxd: `voxd serve --parallel-jobs` in its own process (startServeChild of
// bench-server.mjs), the model with N slots; the HTTP client is scripts/bench-load.mjs --socket in a
// process of its own (N keep-alive TCP connections, each writing its prebuilt request as one buffer
// and reading the answer by its length: 0.1 ms of CPU a request where node:http's client took 1 ms),
// started asynchronously for each round.
// Every request body is serialized once, before any round: its bytes are written to a file that the
// load generator reads once and sends as they are with every request; requests/s = completed /
// seconds. The load generator's own CPU per request (its stderr) is the last column: the client's
// cost, which on a small machine shares the CPUs with the server and its runners.
// Neither side's client shares a process with the other side's engine work, so a voxd figure is
// charged with voxd's own work (server process, its runners) and the load generator's, and an alone
// figure with the engine's runners and this process's calls into them.
// Where the CPU goes, per round (the second table): each process's CPU time (utime + stime of
// /proc/<pid>/stat, 10 ms ticks; the server's main thread from /proc/<pid>/task/<pid>/stat) and the
// machine's busy cores (/proc/stat) over the round, divided by the requests it completed. Alone: its
// runners, and this process (the callers). Through voxd: its runners (the server's child processes),
// the server's main thread and its other threads, and the load generator (its own count). With both
// cores busy, a side's requests/s is bounded by cores / (its CPU per request), so the two sides'
// totals say how far voxd / alone can go at 2 in flight whatever the order of the work.
// Each side gets warm-up requests (one per session or slot, in flight together), then one unmeasured
// round of each, before its rounds: the server's code is optimized by V8 only after hundreds of
// requests (the first measured round of a 5 s VAD request ran at 0.65 of the fifth without it).
//
// Rows (engine, family, how voxd gets the request):
//   flite        flite_tts         POST /v1/audio/speech, JSON {model, input} (the sentence below)
//   silero-vad   silero_vad        POST /v1/tasks/run, JSON {model, audio_base64};
//                                 no multipart route takes a VAD model (/v1/audio/transcriptions and
//                                 /v1/batches/transcriptions serve asr and diar only, /v1/tasks/run
//                                 reads JSON only), so the second row is the closest to an upload
//                                 of bytes: POST /v1/tasks/run, JSON {model, audio} naming the WAV
//                                 as a server-local file (in the server's config folder, a file root)
//   classic-diar classic_diar      POST /v1/tasks/run, JSON {model, audio_base64}; and
//                                 POST /v1/audio/transcriptions, multipart {model, file}
//   pocketsphinx pocketsphinx_asr  POST /v1/tasks/run, JSON {model, audio_base64}; and
//                                 POST /v1/audio/transcriptions, multipart {model, file}
// The audio of VAD, diarization and recognition: one clip, the sentence below spoken by flite
// (through a voxd child, response_format pcm at 16 kHz: about 6.1 s of speech) cut to a 16 kHz mono
// PCM16 WAV of 5 s (repeated to fill it, were it shorter), made once; the engines alone get the same
// WAV decoded (decodeWav). The LibriVox clips of test/helpers/librivox.ts are not used: Debian's
// pocketsphinx-testdata may be installed without them.
// Usage: npm run build && node scripts/bench-raw-engine.mjs [seconds-per-round] [--rounds=N]
//   [--only=<engine>[,<engine>]] (engines: flite, silero-vad, classic-diar, pocketsphinx)
import { readFileSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { decodeWav } from '../dist/src/audio/wav-decode.js';
import { runnerProcessIds } from '../dist/src/engines/engine-worker.js';
import {
  childrenOf,
  cpuMsOf,
  loadAlone,
  SENTENCE,
  socketLoad,
  spokenClip,
  startServeChild,
} from './bench-server.mjs';

const args = process.argv.slice(2);
const SECONDS = Number(args.find((a) => /^\d+(\.\d+)?$/.test(a)) ?? 4);
const ROUNDS = Number(args.find((a) => a.startsWith('--rounds='))?.slice(9) ?? 3);
const ONLY = args
  .find((a) => a.startsWith('--only='))
  ?.slice(7)
  .split(',')
  .filter(Boolean);
const CLIP_SECONDS = 5;
const RATE = 16000;

/** One POST of pre-built bytes (warm-ups and set-up only, never a measured request). */
function post(agent, url, body, contentType) {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', agent, headers: { 'content-type': contentType, 'content-length': body.length } },
      (res) => {
        const parts = [];
        res.on('data', (d) => parts.push(d));
        res.on('end', () => {
          const bytes = Buffer.concat(parts);
          if (res.statusCode === 200) resolve(bytes);
          else reject(new Error(`${url}: HTTP ${res.statusCode} ${bytes.toString().slice(0, 500)}`));
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

// --- The clip: the sentence spoken by flite at 16 kHz, cut to (or repeated to fill) CLIP_SECONDS.
const { wav: WAV, speechSeconds } = await spokenClip(CLIP_SECONDS, RATE);
const audio = decodeWav(WAV);
console.error(
  `clip: ${speechSeconds.toFixed(2)} s of speech, as a ${CLIP_SECONDS} s WAV of ${WAV.length} bytes`,
);

// --- Request bodies, each serialized once.
const json = (value) => ({ body: Buffer.from(JSON.stringify(value)), contentType: 'application/json' });
async function multipart(model) {
  const form = new FormData();
  form.set('model', model);
  form.set('file', new Blob([WAV], { type: 'audio/wav' }), 'clip.wav');
  const encoded = new Response(form);
  return {
    body: Buffer.from(await encoded.arrayBuffer()),
    contentType: encoded.headers.get('content-type'),
  };
}
const CLIP_FILE = 'clip.wav'; // in the server's folder, written when the server has started
const base64 = (model) => ({
  upload: 'base64 JSON',
  route: '/v1/tasks/run',
  ...json({ model, audio_base64: WAV.toString('base64') }),
});
const transcriptionUpload = async (model) => ({
  upload: 'multipart WAV',
  route: '/v1/audio/transcriptions',
  ...(await multipart(model)),
});

const ENGINES = [
  {
    id: 'flite',
    family: 'flite_tts',
    task: 'tts',
    request: { task: 'tts', text: SENTENCE, options: {} },
    shapes: [
      { upload: 'JSON text', route: '/v1/audio/speech', ...json({ model: 'flite', input: SENTENCE }) },
    ],
  },
  {
    id: 'silero-vad',
    family: 'silero_vad',
    task: 'vad',
    request: { task: 'vad', audio, options: {} },
    shapes: [
      base64('silero-vad'),
      // The path is the server's folder's, known once it started: filled in per server below.
      { upload: 'server-local file (JSON path)', route: '/v1/tasks/run', serverFile: 'silero-vad' },
    ],
  },
  {
    id: 'classic-diar',
    family: 'classic_diar',
    task: 'diar',
    request: { task: 'diar', audio, options: {} },
    shapes: [base64('classic-diar'), await transcriptionUpload('classic-diar')],
  },
  {
    id: 'pocketsphinx',
    family: 'pocketsphinx_asr',
    task: 'asr',
    request: { task: 'asr', audio, options: {} },
    shapes: [base64('pocketsphinx'), await transcriptionUpload('pocketsphinx')],
  },
].filter((e) => !ONLY || ONLY.includes(e.id));
if (ONLY)
  for (const id of ONLY) if (!ENGINES.some((e) => e.id === id)) throw new Error(`--only: no engine '${id}'`);

// --- CPU accounting (Linux /proc).
/** The machine's busy and total CPU time so far, in ticks (idle and iowait count as not busy). */
function machineTicks() {
  const ticks = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const total = ticks.reduce((a, b) => a + b, 0);
  return { busy: total - ticks[3] - ticks[4], total };
}

/**
 * Starts counting the CPU of `parts` (name -> stat file paths, summed); `end(requests)` gives each
 * part's ms per request and the machine's busy cores over the interval.
 */
function cpuAccount(parts) {
  const read = () =>
    Object.fromEntries(
      Object.entries(parts).map(([k, paths]) => [k, paths.reduce((a, p) => a + cpuMsOf(p), 0)]),
    );
  const before = read();
  const machine = machineTicks();
  return (requests) => {
    const after = read();
    const now = machineTicks();
    const perRequest = Object.fromEntries(
      Object.keys(parts).map((k) => [k, (after[k] - before[k]) / requests]),
    );
    const cores = (availableParallelism() * (now.busy - machine.busy)) / (now.total - machine.total);
    return { ...perRequest, cores };
  };
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

/** One voxd round of SECONDS: requests/s and the load generator's CPU per request (ms). */
async function loadRound(url, bodyFile, contentType, inFlight) {
  const { done, cpuMs } = await socketLoad(url, bodyFile, inFlight, SECONDS, contentType);
  return { rate: done / SECONDS, cpuMs };
}

const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
/** Each field's median over the rounds' CPU accounts. */
const medians = (accounts) =>
  Object.fromEntries(Object.keys(accounts[0]).map((k) => [k, median(accounts.map((a) => a[k]))]));
const rows = [];
for (const engine of ENGINES) {
  for (const n of [1, 2]) {
    // Alone: the family's weights and n sessions, each in its runner process, called directly.
    const { weights, sessions } = await loadAlone(engine.family, engine.id, engine.task, n);
    const signal = new AbortController().signal;
    const alone = (i) => sessions[i].run(engine.request, { signal });
    await Promise.all(sessions.map((_, i) => alone(i)));

    // Through voxd: its own process, n slots.
    const voxd = await startServeChild({
      models: [{ id: engine.id, family: engine.family, task: engine.task, slots: n }],
    });
    writeFileSync(join(voxd.dir, CLIP_FILE), WAV);
    const agent = new Agent({ keepAlive: true, maxSockets: n });
    for (const [s, shape] of engine.shapes.entries()) {
      const { body, contentType } = shape.serverFile
        ? json({ model: shape.serverFile, audio: join(voxd.dir, CLIP_FILE) })
        : shape;
      const bodyFile = join(voxd.dir, `body-${s}`);
      writeFileSync(bodyFile, body);
      const url = `${voxd.base}${shape.route}`;
      await Promise.all(Array.from({ length: n }, () => post(agent, url, body, contentType)));
      await closedLoop(n, alone);
      await loadRound(url, bodyFile, contentType, n);
      const stat = (pid) => `/proc/${pid}/stat`;
      const pid = voxd.child.pid;
      const aloneParts = { runners: runnerProcessIds().map(stat), caller: [stat(process.pid)] };
      const voxdParts = {
        runners: childrenOf(pid).map(stat),
        main: [`/proc/${pid}/task/${pid}/stat`],
        server: [stat(pid)],
      };
      const runs = { alone: [], voxd: [], cpu: [], aloneCpu: [], voxdCpu: [] };
      for (let r = 0; r < ROUNDS; r++) {
        const countAlone = cpuAccount(aloneParts);
        runs.alone.push(await closedLoop(n, alone));
        runs.aloneCpu.push(countAlone(runs.alone.at(-1) * SECONDS));
        const countVoxd = cpuAccount(voxdParts);
        const round = await loadRound(url, bodyFile, contentType, n);
        runs.voxd.push(round.rate);
        runs.cpu.push(round.cpuMs);
        runs.voxdCpu.push(countVoxd(round.rate * SECONDS));
      }
      const row = {
        engine: engine.id,
        upload: shape.upload,
        route: shape.route,
        n,
        alone: median(runs.alone),
        voxd: median(runs.voxd),
        cpuMs: median(runs.cpu),
        // Each voxd round against the alone round just before it: the machine's own drift (a
        // shared 2-core VM) moves both of a pair alike.
        ratio: median(runs.voxd.map((v, i) => v / runs.alone[i])),
        aloneCpu: medians(runs.aloneCpu),
        voxdCpu: medians(runs.voxdCpu),
        runs,
      };
      rows.push(row);
      console.error(JSON.stringify(row));
    }
    agent.destroy();
    await voxd.stop();
    for (const session of sessions) await session.dispose();
    await weights.dispose();
  }
}

console.log(
  `Engines alone (in their runner processes, called from the bench process) against voxd (its own process, ` +
    `HTTP client scripts/bench-load.mjs --socket in its own process, each request built once); ${SECONDS} s rounds, ` +
    `median of ${ROUNDS}; audio: ${CLIP_SECONDS} s, 16 kHz mono WAV.\n`,
);
console.log(
  "| engine | upload | in flight | engine alone (requests/s) | through voxd (requests/s) | voxd / alone (median of the rounds' ratios) | rounds alone; voxd | load generator CPU (ms/request) |",
);
console.log('|---|---|---:|---:|---:|---:|---|---:|');
const fmt = (x) => x.toFixed(1);
for (const r of rows)
  console.log(
    `| ${r.engine} | ${r.upload}, \`${r.route}\` | ${r.n} | ${fmt(r.alone)} | ${fmt(r.voxd)} | ${r.ratio.toFixed(2)} | ${r.runs.alone.map(fmt).join(', ')}; ${r.runs.voxd.map(fmt).join(', ')} | ${r.cpuMs.toFixed(2)} |`,
  );

console.log(
  `\nWhere the CPU goes: ms of CPU per request (medians of the rounds), and the cores busy on the ${availableParallelism()}-core machine. ` +
    "Alone: its runners and the calling process. Through voxd: its runners, the server's main thread, its other " +
    "threads, the load generator. Total: all of a side's processes; cores / total is the requests/s the CPU allows.\n",
);
console.log(
  '| engine | upload | in flight | alone: runners | caller | total | cores busy | voxd: runners | main thread | other threads | load generator | total | cores busy | alone total / voxd total |',
);
console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
const ms = (x) => x.toFixed(2);
for (const r of rows) {
  const a = r.aloneCpu;
  const v = r.voxdCpu;
  const aloneTotal = a.runners + a.caller;
  const voxdTotal = v.runners + v.server + r.cpuMs;
  console.log(
    `| ${r.engine} | ${r.upload} | ${r.n} | ${ms(a.runners)} | ${ms(a.caller)} | ${ms(aloneTotal)} | ${a.cores.toFixed(2)} | ${ms(v.runners)} | ${ms(v.main)} | ${ms(v.server - v.main)} | ${ms(r.cpuMs)} | ${ms(voxdTotal)} | ${v.cores.toFixed(2)} | ${(aloneTotal / voxdTotal).toFixed(2)} |`,
  );
}
