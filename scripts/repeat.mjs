// Runs the lifecycle suites (runtime, contract and the HTTP lifecycle tests) repeatedly and reports
// every flake by test name. A flaky test is a bug to fix, not to retry.
// Usage: npm run repeat [-- <runs>]   (default 20)
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const runs = Number(process.argv[2] ?? 20);
const SUITES = ['dist/test/runtime', 'dist/test/contract'];
const HTTP = [
  'lifecycle',
  'management',
  'residency',
  'busy-timeout',
  'streaming',
  'batches',
  'live-routes',
  'https',
].map((n) => `dist/test/http/${n}.test.js`);

function files(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return files(path);
    return name.endsWith('.test.js') ? [path] : [];
  });
}

const selected = [...SUITES.flatMap(files), ...HTTP].sort();
const flakes = new Map();
let clean = 0;
for (let i = 1; i <= runs; i++) {
  const run = spawnSync(
    process.execPath,
    ['--test', '--test-reporter=tap', '--test-concurrency=2', ...selected],
    {
      encoding: 'utf8',
      maxBuffer: 256 * 1024 * 1024,
    },
  );
  const failed = run.stdout
    .split('\n')
    .map((line) => /^\s*not ok \d+ - (.*)$/.exec(line)?.[1])
    .filter((name) => name !== undefined);
  const passed = run.status === 0 && failed.length === 0;
  if (passed) clean++;
  for (const name of failed) flakes.set(name, (flakes.get(name) ?? 0) + 1);
  console.log(`run ${i}/${runs}: ${passed ? 'pass' : `FAIL (exit ${run.status}, ${failed.length} failing)`}`);
}
console.log(`${clean}/${runs} runs passed`);
for (const [name, count] of flakes) console.log(`flaky: ${name} (failed ${count}/${runs})`);
process.exit(clean === runs ? 0 : 1);
