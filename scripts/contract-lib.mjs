// The pure parts of scripts/contract.mjs (parsing the contract, the test sources and the TAP
// stream, and judging coverage), kept apart so test/scripts/contract.test.ts can check them
// without running the suite.
import { relative } from 'node:path';

export const EXPECTED_CELLS = 115;
const TAG = /\[((?:startup|state|pair|order|fail|time)\.[a-z0-9.-]+)\]/g;
const ROW = /^\| `([a-z0-9.-]+)` \|(.*)\|(.*)\|(.*)\|\s*$/;
// `ok N - name # SKIP why` / `not ok N - name # TODO`: the directive is the first unescaped ` # `
// (a `#` inside a name is written `\#`).
const RESULT = /^\s*(not )?ok \d+ - (.*?)(?:(?<!\\) # (SKIP|TODO)\b.*)?$/i;
const COMMENT = /^\s*(\/\/|\/\*|\*)/;

/** Cell id → { pending } from docs/contract.md's table rows. */
export function parseCells(doc) {
  const cells = new Map();
  for (const line of doc.split('\n')) {
    const m = ROW.exec(line);
    if (m) cells.set(m[1], { pending: /pending/i.test(m[3]) });
  }
  return cells;
}

/**
 * Cell id → where it is tagged, from `{ file, text }` sources. `comment` marks a tag on a comment
 * line: it names no test, so the doc does not link it.
 */
export function findTags(sources) {
  const tags = new Map();
  for (const { file, text } of sources) {
    text.split('\n').forEach((line, index) => {
      for (const [, id] of line.matchAll(TAG)) {
        const list = tags.get(id) ?? [];
        list.push({ file, line: index + 1, comment: COMMENT.test(line) });
        tags.set(id, list);
      }
    });
  }
  return tags;
}

/** Cell id → { pass, fail, skip, todo } over the tests (at any depth) of a TAP stream. */
export function parseTap(stdout) {
  const results = new Map();
  for (const line of stdout.split('\n')) {
    const m = RESULT.exec(line);
    if (!m) continue;
    const kind = m[3] ? m[3].toLowerCase() : m[1] ? 'fail' : 'pass';
    for (const [, id] of m[2].matchAll(TAG)) {
      const r = results.get(id) ?? { pass: 0, fail: 0, skip: 0, todo: 0 };
      r[kind]++;
      results.set(id, r);
    }
  }
  return results;
}

/**
 * Judges the coverage. A cell counts as tested only when every test carrying its tag passed and
 * none was skipped or todo; a tag in the sources that no test name carried when the suite ran
 * (a comment, a string that is not a test's name) fails too, since it claims a test that is not
 * there.
 */
export function evaluate({ cells, tags, results }) {
  const missing = [];
  const failing = [];
  const skipped = [];
  let covered = 0;
  for (const [id, cell] of cells) {
    const r = results.get(id);
    if (r && r.fail > 0) failing.push(`${id} (${r.fail} failing)`);
    else if (r && r.skip + r.todo > 0) skipped.push(`${id} (${r.skip} skipped, ${r.todo} todo)`);
    else if (r && r.pass > 0) covered++;
    else if (!cell.pending) missing.push(id);
  }
  const unknown = [...new Set([...tags.keys(), ...results.keys()])].filter((id) => !cells.has(id));
  const notRun = [...tags.keys()]
    .filter((id) => cells.has(id) && !results.has(id))
    .map(
      (id) =>
        `${id} (${tags
          .get(id)
          .map((t) => `${t.file}:${t.line}`)
          .join(', ')})`,
    );
  const pending = [...cells].filter(([id, c]) => c.pending && !results.get(id)?.pass).map(([id]) => id);
  return { covered, missing, failing, skipped, unknown, notRun, pending };
}

/** docs/contract.md with each row's Tests column rebuilt from the tags (comment lines left out). */
export function refreshDoc(doc, tags, docDir = 'docs') {
  return doc
    .split('\n')
    .map((line) => {
      const m = ROW.exec(line);
      if (!m) return line;
      const links = [
        ...new Set(
          (tags.get(m[1]) ?? [])
            .filter((t) => !t.comment)
            .map((t) => `[${relative(docDir, t.file)}:${t.line}](${relative(docDir, t.file)}#L${t.line})`),
        ),
      ];
      const text =
        links.length === 0
          ? '—'
          : links.slice(0, 3).join(', ') + (links.length > 3 ? ` (+${links.length - 3})` : '');
      return `| \`${m[1]}\` |${m[2]}|${m[3]}| ${text} |`;
    })
    .join('\n');
}
