// Load generator for scripts/bench-engines.mjs, run as its own process so that client work does
// not count as server event-loop lag. Prints the number of completed requests.
// Usage: node scripts/bench-load.mjs <url> <body-file> <concurrency> <seconds>
import { readFileSync } from 'node:fs';

const [url, bodyFile, concurrency, seconds] = process.argv.slice(2);
const body = readFileSync(bodyFile);
const deadline = performance.now() + Number(seconds) * 1000;
let done = 0;
await Promise.all(
  Array.from({ length: Number(concurrency) }, async () => {
    while (performance.now() < deadline) {
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
      done++;
    }
  }),
);
console.log(done);
