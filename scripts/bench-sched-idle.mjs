// Where the idle CPU of a 2-in-flight round goes (issue 42): the scheduler's own record of one round
// of 5 s VAD requests, the engine alone and through voxd, as bench-raw-engine.mjs runs them (alone:
// silero-vad's sessions in their runner processes, called from this process; voxd: `voxd serve` in
// its own process with the model at 2 slots, its client scripts/bench-load.mjs --socket in another).
// While each side's round runs, `perf sched record -a` records every context switch for RECORD
// seconds, and `perf sched timehist --state` gives each task's runs on each CPU and the state it left
// it in. From that, per side:
//   - idle: the time the machine's CPUs ran nothing, as a share of all CPU time;
//   - idle with work waiting: the part of it during which some task was runnable and not running
//     (woken and not yet on a CPU, or preempted and not yet back): time a work-conserving scheduler
//     would have used;
//   - waiting: each process's time runnable and not running, per request.
// bench-raw-engine counts the CPU time; this says why the cores are not all busy.
// Needs `perf` (Debian: linux-perf) and the permission to record scheduler events (root, or
// kernel.perf_event_paranoid <= -1). Not part of the tests.
// Usage: npm run build && node scripts/bench-sched-idle.mjs [--seconds=8] [--record=3]
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeWav } from '../dist/src/audio/wav-decode.js';
import { runnerProcessIds } from '../dist/src/engines/engine-worker.js';
import { childrenOf, loadAlone, socketLoad, spokenClip, startServeChild } from './bench-server.mjs';

const arg = (name, fallback) =>
  Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const SECONDS = arg('seconds', 8);
const RECORD = arg('record', 3);
const IN_FLIGHT = 2;

try {
  execFileSync('perf', ['--version'], { stdio: 'ignore' });
} catch {
  console.error('bench-sched-idle needs perf (Debian: apt-get install linux-perf)');
  process.exit(2);
}

const work = mkdtempSync(join(tmpdir(), 'voxd-sched-'));
process.once('exit', () => rmSync(work, { recursive: true, force: true }));

/** `perf sched record` of the whole machine for RECORD s, started `delayMs` from now; resolves with its data file. */
function recordSched(name, delayMs) {
  const data = join(work, `${name}.data`);
  return new Promise((resolve, reject) => {
    setTimeout(() => {
      const perf = spawn('perf', ['sched', 'record', '-a', '-o', data, '--', 'sleep', String(RECORD)], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let err = '';
      perf.stderr.on('data', (d) => {
        err += d;
      });
      perf.once('error', reject);
      perf.once('exit', (code) =>
        code === 0 ? resolve(data) : reject(new Error(`perf sched record: ${err}`)),
      );
    }, delayMs);
  });
}

/**
 * Reads `perf sched timehist --state`: every task's runs (CPU, start, end) and its waits (woken and
 * not yet running, or preempted until it ran again). Times in ms.
 */
function timeline(data) {
  const text = execFileSync('perf', ['sched', 'timehist', '--state', '-i', data], {
    encoding: 'utf8',
    maxBuffer: 256 << 20,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const runs = [];
  const waits = [];
  const lastOut = new Map();
  // "  time [cpu]  task[tid/pid]  wait  sch-delay  run  state"
  const line = /^\s*([\d.]+)\s+\[(\d+)\]\s+(\S.*?)\s{2,}([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\w)?\s*$/;
  for (const row of text.split('\n')) {
    const m = line.exec(row);
    if (!m) continue;
    const [, at, cpu, task, , delay, ran, state] = m;
    const end = Number(at) * 1000;
    const start = end - Number(ran);
    const name = task.trim();
    runs.push({ cpu: Number(cpu), task: name, start, end });
    if (name.startsWith('<idle>')) continue;
    const before = lastOut.get(name);
    const from = before?.state === 'R' ? before.end : start - Number(delay);
    if (start > from) waits.push({ task: name, start: from, end: start });
    lastOut.set(name, { end, state });
  }
  return { runs, waits };
}

/** The process id in a timehist task name: "node[tid]" or "node[tid/pid]". */
const pidOf = (task) => Number(/\[(?:\d+\/)?(\d+)\]$/.exec(task)?.[1]);

/** Idle time, the part of it with work waiting, and each named process's waiting time (ms). */
function account({ runs, waits }, processes) {
  const start = Math.min(...runs.map((r) => r.start));
  const end = Math.max(...runs.map((r) => r.end));
  let idle = 0;
  let idleWithWork = 0;
  const sorted = [...waits].sort((a, b) => a.start - b.start);
  for (const gap of runs.filter((r) => r.task.startsWith('<idle>'))) {
    idle += gap.end - gap.start;
    let covered = gap.start;
    for (const w of sorted) {
      if (w.start >= gap.end) break;
      if (w.end <= covered) continue;
      const from = Math.max(w.start, covered);
      const to = Math.min(w.end, gap.end);
      if (to > from) idleWithWork += to - from;
      covered = Math.max(covered, to);
    }
  }
  const waiting = Object.fromEntries(Object.keys(processes).map((k) => [k, 0]));
  for (const w of waits)
    for (const [name, pids] of Object.entries(processes))
      if (pids.includes(pidOf(w.task))) waiting[name] += w.end - w.start;
  return { span: end - start, idle, idleWithWork, waiting };
}

const { wav } = await spokenClip(5);
const audio = decodeWav(wav);
const bodyFile = join(work, 'body.json');
writeFileSync(bodyFile, JSON.stringify({ model: 'silero-vad', audio_base64: wav.toString('base64') }));
const cores = availableParallelism();
const rows = [];

// --- Alone: the sessions called from this process.
{
  const { weights, sessions } = await loadAlone('silero_vad', 'silero-vad', 'vad', IN_FLIGHT);
  const signal = new AbortController().signal;
  const request = { task: 'vad', audio, options: {} };
  const round = async (seconds) => {
    const end = performance.now() + seconds * 1000;
    let done = 0;
    await Promise.all(
      sessions.map(async (s) => {
        while (performance.now() < end) {
          await s.run(request, { signal });
          done++;
        }
      }),
    );
    return done;
  };
  await round(SECONDS); // warm-up
  const recorded = recordSched('alone', 1000);
  const done = await round(SECONDS);
  const runners = runnerProcessIds();
  const acc = account(timeline(await recorded), { caller: [process.pid], runners });
  rows.push({ side: 'alone', rate: done / SECONDS, ...acc });
  for (const s of sessions) await s.dispose();
  await weights.dispose();
}

// --- Through voxd.
{
  const voxd = await startServeChild({
    models: [{ id: 'silero-vad', family: 'silero_vad', task: 'vad', slots: IN_FLIGHT }],
  });
  const url = `${voxd.base}/v1/tasks/run`;
  await socketLoad(url, bodyFile, IN_FLIGHT, SECONDS, 'application/json'); // warm-up
  const recorded = recordSched('voxd', 1000);
  const loadStarted = socketLoad(url, bodyFile, IN_FLIGHT, SECONDS, 'application/json');
  const runners = childrenOf(voxd.child.pid);
  const data = await recorded;
  const { done } = await loadStarted;
  // The load generator is the one node process recorded that is neither the server nor its runners.
  const tl = timeline(data);
  const others = new Set(
    tl.runs
      .filter((r) => r.task.startsWith('node['))
      .map((r) => pidOf(r.task))
      .filter((pid) => pid !== voxd.child.pid && !runners.includes(pid) && pid !== process.pid),
  );
  const acc = account(tl, { server: [voxd.child.pid], runners, 'load generator': [...others] });
  rows.push({ side: 'voxd', rate: done / SECONDS, ...acc });
  await voxd.stop();
}

console.log(
  `5 s VAD requests (silero-vad, base64 JSON through voxd), ${IN_FLIGHT} in flight, ${SECONDS} s rounds; ` +
    `perf sched record -a for ${RECORD} s of each, on ${cores} cores.\n`,
);
console.log(
  '| side | requests/s | idle (% of all CPU time) | idle while a task was runnable and not running (% of the idle) | runnable and not running (ms/request, by process) |',
);
console.log('|---|---:|---:|---:|---|');
for (const r of rows) {
  const requests = (r.rate * r.span) / 1000;
  const waiting = Object.entries(r.waiting)
    .map(([k, v]) => `${k} ${(v / requests).toFixed(2)}`)
    .join(', ');
  console.log(
    `| ${r.side} | ${r.rate.toFixed(1)} | ${((100 * r.idle) / (cores * r.span)).toFixed(1)} | ${((100 * r.idleWithWork) / r.idle).toFixed(0)} | ${waiting} |`,
  );
}
