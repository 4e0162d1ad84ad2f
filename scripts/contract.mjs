// Checks the behaviour-contract coverage: every cell ID in docs/contract.md that is not marked
// pending must be tagged `[id]` in the name of at least one test, and every tagged test must pass.
// Prints `N/115 cells directly tested` and the missing IDs. `--write` refreshes the Tests column of
// docs/contract.md from the test sources. Run through `npm run contract` (which builds first).
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const DOC = 'docs/contract.md';
const TAG = /\[((?:startup|state|pair|order|fail|time)\.[a-z0-9.-]+)\]/g;
const ROW = /^\| `([a-z0-9.-]+)` \|(.*)\|(.*)\|(.*)\|\s*$/;

function files(dir, suffix) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return files(path, suffix);
    return name.endsWith(suffix) ? [path] : [];
  });
}

const doc = readFileSync(DOC, 'utf8');
const cells = new Map();
for (const line of doc.split('\n')) {
  const m = ROW.exec(line);
  if (m) cells.set(m[1], { pending: /pending/i.test(m[3]) });
}

// Where each ID is tagged in the sources: for the doc's Tests column and for typo checks.
const sources = new Map();
for (const file of files('test', '.test.ts')) {
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((line, index) => {
      for (const [, id] of line.matchAll(TAG)) {
        const list = sources.get(id) ?? [];
        list.push({ file, line: index + 1 });
        sources.set(id, list);
      }
    });
}

// Which tagged tests ran and passed.
const run = spawnSync(
  process.execPath,
  // Only the files that carry cell tags: the rest of the suite is `npm test`'s business.
  [
    '--test',
    '--test-reporter=tap',
    '--test-concurrency=2',
    ...[...new Set([...sources.values()].flat().map((t) => t.file))]
      .map((f) => join('dist', f.replace(/\.ts$/, '.js')))
      .sort(),
  ],
  { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 },
);
const results = new Map();
for (const line of run.stdout.split('\n')) {
  const m = /^\s*(not )?ok \d+ - (.*)$/.exec(line);
  if (!m) continue;
  for (const [, id] of m[2].matchAll(TAG)) {
    const r = results.get(id) ?? { pass: 0, fail: 0 };
    if (m[1]) r.fail++;
    else r.pass++;
    results.set(id, r);
  }
}

const unknown = [...new Set([...sources.keys(), ...results.keys()])].filter((id) => !cells.has(id));
const missing = [];
const failing = [];
let covered = 0;
for (const [id, cell] of cells) {
  const r = results.get(id);
  if (r && r.fail > 0) failing.push(`${id} (${r.fail} failing)`);
  else if (r && r.pass > 0) covered++;
  else if (!cell.pending) missing.push(id);
}
const pending = [...cells].filter(([id, c]) => c.pending && !results.get(id)?.pass).map(([id]) => id);

const refreshed = doc
  .split('\n')
  .map((line) => {
    const m = ROW.exec(line);
    if (!m) return line;
    const links = [
      ...new Set(
        (sources.get(m[1]) ?? []).map(
          (t) => `[${relative('docs', t.file)}:${t.line}](${relative('docs', t.file)}#L${t.line})`,
        ),
      ),
    ];
    const text =
      links.length === 0
        ? '—'
        : links.slice(0, 3).join(', ') + (links.length > 3 ? ` (+${links.length - 3})` : '');
    return `| \`${m[1]}\` |${m[2]}|${m[3]}| ${text} |`;
  })
  .join('\n');
const write = process.argv.includes('--write');
if (write) writeFileSync(DOC, refreshed);
const stale = !write && refreshed !== doc;

console.log(`${covered}/${cells.size} cells directly tested`);
if (pending.length) console.log(`pending (later issues): ${pending.length}: ${pending.join(', ')}`);
if (missing.length) console.log(`missing: ${missing.length}: ${missing.join(', ')}`);
if (failing.length) console.log(`failing: ${failing.join(', ')}`);
if (unknown.length) console.log(`tags that are not cell IDs: ${unknown.join(', ')}`);
if (cells.size !== 115) console.log(`docs/contract.md lists ${cells.size} cells; expected 115`);
if (stale) console.log('docs/contract.md test links are stale: run `npm run contract -- --write`');
const ok =
  missing.length === 0 &&
  failing.length === 0 &&
  unknown.length === 0 &&
  cells.size === 115 &&
  run.status === 0;
if (run.status !== 0) console.log('the test run failed; see `npm test`');
process.exit(ok ? 0 : 1);
