#!/usr/bin/env node
/**
 * `npm run fuzz -- --cases N [--seed S] [--case K] [--concurrency C] [--check-every N]`: the seeded
 * HTTP fuzzer (test/fuzz/fuzz.ts, built into dist/ by `npm run fuzz`'s tsc step). Exits 0 when it
 * reports no finding and 1 when it reports any (each finding prints the command that replays it
 * alone); 2 when the fuzzer could not run at all.
 */
import { existsSync } from 'node:fs';

const built = new URL('../dist/test/fuzz/fuzz.js', import.meta.url);
if (!existsSync(built)) {
  process.stderr.write('dist/test/fuzz/fuzz.js is missing; run `npx tsc -p tsconfig.json` first\n');
  process.exit(2);
}
const { main } = await import(built.href);
let code;
try {
  code = await main(process.argv.slice(2));
} catch (err) {
  process.stderr.write(`fuzz: could not run: ${err?.stack ?? err}\n`);
  code = 2;
}
// Exit at once with the code the summary stands for: the server is closed (or given up on) by
// now, and whatever it left running (a socket closing late, a timer) must not get to throw, reject
// or keep the process alive after the summary was printed. stdout and stderr are written
// synchronously to files and pipes, so nothing printed is lost.
process.exit(code);
