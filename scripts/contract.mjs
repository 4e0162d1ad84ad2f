// Checks the behaviour-contract coverage: every cell ID in docs/contract.md that is not marked
// pending must be tagged `[id]` in the name of at least one test, and every tagged test must pass —
// a skipped or todo test, a tag that no test name carries (a comment, a stray string) and stale
// links in docs/contract.md all fail the check. Prints `N/115 cells directly tested` and what is
// wrong. `--write` refreshes the Tests column of docs/contract.md from the test sources. Run through
// `npm run contract` (which builds first). The parsing lives in scripts/contract-lib.mjs.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EXPECTED_CELLS, evaluate, findTags, parseCells, parseTap, refreshDoc } from './contract-lib.mjs';

const DOC = 'docs/contract.md';

function files(dir, suffix) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return files(path, suffix);
    return name.endsWith(suffix) ? [path] : [];
  });
}

const doc = readFileSync(DOC, 'utf8');
const cells = parseCells(doc);
const tags = findTags(files('test', '.test.ts').map((file) => ({ file, text: readFileSync(file, 'utf8') })));

// `--results DIR`: judge the TAP files `npm test` wrote there (scripts/run-tests.mjs) instead of
// running the tagged files again (CI runs the whole suite once). `--static`: only what needs no run
// (tags, the cell count, stale links), so that CI fails on those in seconds.
const arg = (name) => {
  const at = process.argv.indexOf(name);
  return at < 0 ? undefined : process.argv[at + 1];
};
const resultsDir = arg('--results');
const staticOnly = process.argv.includes('--static');
const run = staticOnly
  ? { status: 0, stdout: '' }
  : resultsDir
    ? {
        status: 0,
        stdout: files(resultsDir, '.tap')
          .map((f) => readFileSync(f, 'utf8'))
          .join('\n'),
      }
    : spawnSync(
        process.execPath,
        // Only the files that carry cell tags: the rest of the suite is `npm test`'s business.
        [
          '--test',
          '--test-reporter=tap',
          '--test-concurrency=2',
          ...[...new Set([...tags.values()].flat().map((t) => t.file))]
            .map((f) => join('dist', f.replace(/\.ts$/, '.js')))
            .sort(),
        ],
        { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 },
      );
const judged = evaluate({ cells, tags, results: parseTap(run.stdout) });
const { covered, failing, skipped, unknown, pending } = judged;
// Without a run, no test name was seen: only the tags in the sources are judged.
const missing = staticOnly
  ? [...cells].filter(([id, cell]) => !cell.pending && !tags.has(id)).map(([id]) => id)
  : judged.missing;
const notRun = staticOnly ? [] : judged.notRun;
const unknownTags = staticOnly ? [...tags.keys()].filter((id) => !cells.has(id)) : unknown;

const refreshed = refreshDoc(doc, tags);
const write = process.argv.includes('--write');
if (write) writeFileSync(DOC, refreshed);
const stale = !write && refreshed !== doc;

if (staticOnly) console.log(`${cells.size} cells, ${tags.size} tagged in the tests (not run: --static)`);
else console.log(`${covered}/${cells.size} cells directly tested`);
if (pending.length) console.log(`pending (later issues): ${pending.length}: ${pending.join(', ')}`);
const problems = [];
if (missing.length) problems.push(`missing: ${missing.length}: ${missing.join(', ')}`);
if (failing.length) problems.push(`failing: ${failing.join(', ')}`);
if (skipped.length)
  problems.push(`skipped or todo (a cell is tested only by tests that run): ${skipped.join(', ')}`);
if (notRun.length)
  problems.push(
    `tagged in the sources but no test by that name ran (a comment or a stray string?): ${notRun.join('; ')}`,
  );
if (unknownTags.length) problems.push(`tags that are not cell IDs: ${unknownTags.join(', ')}`);
if (cells.size !== EXPECTED_CELLS)
  problems.push(`${DOC} lists ${cells.size} cells; expected ${EXPECTED_CELLS}`);
if (stale) problems.push(`${DOC} test links are stale: run \`npm run contract -- --write\``);
if (run.status !== 0) problems.push('the test run failed; see `npm test`');
for (const p of problems) console.log(`FAIL ${p}`);
process.exit(problems.length === 0 ? 0 : 1);
