// Preloaded into the server by bench-gc-route.mjs (node --import): counts V8's collections by kind
// (perf_hooks 'gc' entries: minor = scavenge, major = full, incremental = an incremental marking's
// steps). SIGUSR1 starts the count over; SIGUSR2 writes it, with the time each kind took, to
// $VOXD_GC_COUNTS_OUT. Read through perf_hooks rather than --trace-gc, whose lines V8 writes through
// a buffered stdout.
import { writeFileSync } from 'node:fs';
import { constants, PerformanceObserver } from 'node:perf_hooks';

const KINDS = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};
let counts = {};
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    const kind = KINDS[entry.detail.kind] ?? String(entry.detail.kind);
    counts[kind] ??= { n: 0, ms: 0 };
    counts[kind].n++;
    counts[kind].ms += entry.duration;
  }
}).observe({ entryTypes: ['gc'] });
process.on('SIGUSR1', () => {
  counts = {};
});
process.on('SIGUSR2', () => writeFileSync(process.env.VOXD_GC_COUNTS_OUT, JSON.stringify(counts)));
