// Runs the lifecycle suites (runtime, contract and the HTTP lifecycle tests) repeatedly and reports
// every flake by test name. A flaky test is a bug to fix, not to retry. `--burn N` keeps N CPU
// burners (busy node processes) running beside the suites the whole time, the way a loaded 2-core
// machine would: the tests force their orderings with gates and a manual clock, so they must pass
// however slow the machine is.
// Usage: npm run repeat [-- <runs>] [--burn N]   (default 20 runs, no burner)
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const args = process.argv.slice(2);
const burnAt = args.indexOf('--burn');
const burn = burnAt >= 0 ? Number(args[burnAt + 1]) : 0;
const positional = args.filter((a, i) => !a.startsWith('--') && (burnAt < 0 || i !== burnAt + 1));
const runs = Number(positional[0] ?? 20);
if (!Number.isInteger(runs) || runs < 1 || !Number.isInteger(burn) || burn < 0) {
  console.error('usage: npm run repeat [-- <runs>] [--burn N]');
  process.exit(2);
}

// Each burner, and each run of the suites, is a child process stopped by its pid on every way out
// (the runs are awaited, never spawnSync'd, so that a signal is handled while one is going).
const burners = Array.from({ length: burn }, () =>
  spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }),
);
let current;
const stopChildren = () => {
  for (const child of [...burners, current])
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
};
process.on('exit', stopChildren);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'])
  process.on(signal, () => {
    stopChildren();
    process.exit(130);
  });

/** One run of the selected files; resolves with its exit status and its TAP output. */
function runOnce(files) {
  return new Promise((resolve) => {
    current = spawn(process.execPath, ['--test', '--test-reporter=tap', '--test-concurrency=2', ...files], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let stdout = '';
    current.stdout.setEncoding('utf8');
    current.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    current.on('close', (status) => resolve({ status, stdout }));
  });
}

const SUITES = ['dist/test/runtime', 'dist/test/contract'];
const HTTP = [
  'lifecycle',
  'management',
  'residency',
  'busy-timeout',
  'streaming',
  'batches',
  'live-routes',
  'live-body',
  'queue-bound',
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
if (burn > 0) console.log(`${burn} CPU burner(s) running: pids ${burners.map((b) => b.pid).join(', ')}`);
for (let i = 1; i <= runs; i++) {
  const started = performance.now();
  const run = await runOnce(selected);
  const failed = run.stdout
    .split('\n')
    .map((line) => /^\s*not ok \d+ - (.*)$/.exec(line)?.[1])
    .filter((name) => name !== undefined);
  const passed = run.status === 0 && failed.length === 0;
  if (passed) clean++;
  for (const name of failed) flakes.set(name, (flakes.get(name) ?? 0) + 1);
  const seconds = ((performance.now() - started) / 1000).toFixed(0);
  console.log(
    `run ${i}/${runs}: ${passed ? 'pass' : `FAIL (exit ${run.status}, ${failed.length} failing)`} in ${seconds} s`,
  );
}
console.log(`${clean}/${runs} runs passed`);
for (const [name, count] of flakes) console.log(`flaky: ${name} (failed ${count}/${runs})`);
process.exit(clean === runs ? 0 : 1);
