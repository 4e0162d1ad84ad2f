#!/usr/bin/env node
/**
 * `npm run fuzz -- --cases N [--seed S] [--case K] [--concurrency C] [--check-every N]`: the seeded
 * HTTP fuzzer (test/fuzz/fuzz.ts, built into dist/ by `npm run fuzz`'s tsc step). Exits 1 on any
 * finding; each finding prints the command that replays it alone.
 */
import { existsSync } from 'node:fs';

const built = new URL('../dist/test/fuzz/fuzz.js', import.meta.url);
if (!existsSync(built)) {
  process.stderr.write('dist/test/fuzz/fuzz.js is missing; run `npx tsc -p tsconfig.json` first\n');
  process.exit(2);
}
const { main } = await import(built.href);
process.exitCode = await main(process.argv.slice(2));
