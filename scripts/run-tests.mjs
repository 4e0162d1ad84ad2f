// Runs every compiled test file with Node's built-in test runner. Engine tests (real native and
// WebAssembly engines, CPU-heavy) run after the others, two files at a time: on the 2-core machine
// they took 340 s one at a time and 227-230 s two at a time, all 292 passing in both runs. The
// scale-out tests (HTTP and realtime) and the event-loop bound then run alone, one after the other, and browser tests
// (dist/test/browser, headless Chromium) last, two files at a time; they are never skipped: without
// Debian's chromium they fail and say to run `npm test` (or `node scripts/setup.mjs --for-tests`) as
// root.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
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
// The one-shot CLI commands run real engines in child processes too; the scale-out tests
// (deploy/scale-out*.test: HTTP under load, realtime sessions) each run two servers and nginx, which
// is enough for 2 cores without another file beside them. The event-loop bound (http/event-loop-bound)
// measures how long one message holds the server's thread, in wall time: beside another file a
// 5 ms message measured 100-200 ms, the time the other process held the cores.
const alone = (f) => f.includes(join('deploy', 'scale-out')) || f.includes(join('http', 'event-loop-bound'));
const heavy = (f) =>
  (f.startsWith(join('dist', 'test', 'engines')) && !f.includes(join('engines', 'fixture'))) ||
  f.includes(join('cli', 'one-shot.test'));
const browser = (f) => f.startsWith(join('dist', 'test', 'browser'));
// The engine files that take a minute or more on the 2-core machine (determinism about 120 s,
// edge-cases about 100 s, pocketsphinx history, its suite and its 20-clip streaming check over 60 s
// each) start first, so that the group does not end on one long file running alone.
const LONGEST = [
  'determinism.test',
  'engines/edge-cases.test',
  'pocketsphinx/history.test',
  'pocketsphinx/pocketsphinx.test',
  'cli/one-shot.test',
  'pocketsphinx/settled-prefix.test',
];
const rank = (f) => {
  const at = LONGEST.findIndex((name) => f.includes(join(...name.split('/'))));
  return at < 0 ? LONGEST.length : at;
};
const longestFirst = (files) => [...files].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
// What a person or CI reads goes to stdout (spec in CI and on a terminal, TAP otherwise, as Node
// picks); each group's TAP also goes to dist/test-results/, from which `scripts/contract.mjs
// --results` judges the contract cells without running their files a second time.
const RESULTS = join('dist', 'test-results');
rmSync(RESULTS, { recursive: true, force: true });
mkdirSync(RESULTS, { recursive: true });
const shown = process.env.CI || process.stdout.isTTY ? 'spec' : 'tap';
const reporters = (group) => [
  `--test-reporter=${shown}`,
  '--test-reporter-destination=stdout',
  '--test-reporter=tap',
  `--test-reporter-destination=${join(RESULTS, `${group}.tap`)}`,
];
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
for (const [name, group, concurrency] of [
  ['light', selected.filter((f) => !heavy(f) && !alone(f) && !browser(f)), 2],
  ['engines', longestFirst(selected.filter(heavy)), 2],
  ['alone', selected.filter(alone), 1],
  // Mostly waiting on Chromium and the page: two at a time took 45 s where one at a time took 63 s.
  ['browser', selected.filter(browser), 2],
]) {
  if (group.length === 0) continue;
  const result = spawnSync(
    process.execPath,
    ['--test', `--test-concurrency=${concurrency}`, ...timeout, ...reporters(name), ...group],
    {
      stdio: 'inherit',
    },
  );
  if (result.status !== 0) status = result.status ?? 1;
}
process.exit(status);
