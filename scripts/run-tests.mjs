// Runs every compiled test file with Node's built-in test runner. Engine tests (real native and
// WebAssembly engines, CPU-heavy) run after the others, two files at a time: on the 2-core machine
// they took 340 s one at a time and 227-230 s two at a time, all 292 passing in both runs. The
// scale-out test then runs alone, and browser tests (dist/test/browser, headless Chromium) last, one
// file at a time; they are never skipped: without Debian's chromium they fail and say to run
// `npm test` (or `node scripts/setup.mjs --for-tests`) as root.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function collect(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return collect(path);
    return name.endsWith('.test.js') ? [path] : [];
  });
}

const files = collect('dist/test').sort();
const filter = process.argv.slice(2);
const selected = filter.length ? files.filter((f) => filter.some((part) => f.includes(part))) : files;
// The one-shot CLI commands run real engines in child processes too; the scale-out test runs two
// servers, nginx and a steady load, which is enough for 2 cores without another file beside it.
const alone = (f) => f.includes(join('deploy', 'scale-out.test'));
const heavy = (f) =>
  (f.startsWith(join('dist', 'test', 'engines')) && !f.includes(join('engines', 'fixture'))) ||
  f.includes(join('cli', 'one-shot.test'));
const browser = (f) => f.startsWith(join('dist', 'test', 'browser'));
const reporter = process.env.CI ? ['--test-reporter=spec'] : [];
// A test that hangs (a lease never released, a wait in line) fails its file after 10 minutes
// instead of stalling the run until CI's limit: Node 20 applies --test-timeout to each file's
// process (the longest test here takes about 40 s). The flag exists from Node 20.11 and 21.2.
const [major, minor] = process.versions.node.split('.').map(Number);
const FILE_TIMEOUT_MS = 600_000;
const timeout =
  major > 21 || (major === 21 && minor >= 2) || (major === 20 && minor >= 11)
    ? [`--test-timeout=${FILE_TIMEOUT_MS}`]
    : [];
// Every response the test helpers receive is checked against GET /openapi.json's document
// (test/helpers/voxd.ts), so the whole suite keeps the document honest; VOXD_OPENAPI_CHECK=0 skips it.
process.env.VOXD_OPENAPI_CHECK ??= '1';
let status = 0;
for (const [group, concurrency] of [
  [selected.filter((f) => !heavy(f) && !alone(f) && !browser(f)), 2],
  [selected.filter(heavy), 2],
  [selected.filter(alone), 1],
  [selected.filter(browser), 1],
]) {
  if (group.length === 0) continue;
  const result = spawnSync(
    process.execPath,
    ['--test', `--test-concurrency=${concurrency}`, ...timeout, ...reporter, ...group],
    {
      stdio: 'inherit',
    },
  );
  if (result.status !== 0) status = result.status ?? 1;
}
process.exit(status);
