// What a runner child process costs a request compared with a worker thread: the round trip of an
// engine call carrying 5 s of 16 kHz audio (320 kB) each way, through EngineWorker, with an engine
// that does nothing. Not a test: prints a Markdown table for docs/performance.md.
// Usage: npm run build && node scripts/bench-runner.mjs [calls]
import { EngineWorker } from '../dist/src/engines/engine-worker.js';

const CALLS = Number(process.argv[2] ?? 300);
const ENGINE = new URL('../dist/test/engines/engine-worker/test-engine.js', import.meta.url);
const samples = new Float32Array(5 * 16000).map((_, i) => Math.sin(i / 7));
const signal = new AbortController().signal;

const rows = [];
for (const isolation of ['thread', 'process']) {
  const worker = new EngineWorker(ENGINE, { loadMs: 0, tag: 'bench' }, isolation);
  const startup = performance.now();
  await worker.call({ op: 'where' }, signal);
  const startupMs = performance.now() - startup;
  for (let i = 0; i < 20; i++) await worker.call({ op: 'echo', samples: samples.slice() }, signal); // warm
  const times = [];
  for (let i = 0; i < CALLS; i++) {
    const copy = samples.slice();
    const t = performance.now();
    await worker.call({ op: 'echo', samples: copy }, signal, [copy.buffer]);
    times.push(performance.now() - t);
  }
  await worker.dispose();
  times.sort((a, b) => a - b);
  const at = (p) => times[Math.min(times.length - 1, Math.floor((p / 100) * times.length))];
  rows.push({ isolation, startupMs, p50: at(50), p99: at(99) });
}
console.log('| isolation | first call (start) ms | round trip p50 ms | p99 ms |');
console.log('|---|---:|---:|---:|');
for (const r of rows)
  console.log(`| ${r.isolation} | ${r.startupMs.toFixed(1)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} |`);
const [thread, runner] = rows;
console.log(
  `\nA runner process adds ${(runner.p50 - thread.p50).toFixed(2)} ms at the median (${(runner.p99 - thread.p99).toFixed(2)} ms at p99).`,
);
