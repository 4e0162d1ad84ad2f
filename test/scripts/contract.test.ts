/**
 * scripts/contract-lib.mjs: the contract check fails on a skipped or todo test, on a tag that no
 * test name carries, and its doc refresh leaves comment tags unlinked.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

type Tag = { file: string; line: number; comment: boolean };
type Results = Map<string, { pass: number; fail: number; skip: number; todo: number }>;
type Lib = {
  parseCells(doc: string): Map<string, { pending: boolean }>;
  findTags(sources: { file: string; text: string }[]): Map<string, Tag[]>;
  parseTap(stdout: string): Results;
  evaluate(input: {
    cells: Map<string, { pending: boolean }>;
    tags: Map<string, Tag[]>;
    results: Results;
  }): Record<'missing' | 'failing' | 'skipped' | 'unknown' | 'notRun' | 'pending', string[]> & {
    covered: number;
  };
  refreshDoc(doc: string, tags: Map<string, Tag[]>): string;
};

// An .mjs outside the TypeScript project: its path is built at run time so tsc leaves it alone.
const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const lib = (await import(join(REPO_ROOT, 'scripts', 'contract-lib.mjs'))) as Lib;

// Tags are written `<id>` here and bracketed at run time, so that the contract check, which scans
// this file too, does not take the examples for tests of real cells.
const t = (text: string) => text.replace(/<((?:fail|time)\.[a-z]+)>/g, '[$1]');

const DOC = [
  '| id | contract | notes | tests |',
  '| `fail.a` | A. | Contract U. | — |',
  '| `fail.b` | B. | Contract U. | — |',
  '| `time.c` | C. | pending (later). | — |',
].join('\n');
const SOURCE = t(
  [
    '/**',
    ' * <time.c> is described here only.',
    ' */',
    "test('<fail.a> runs', () => {});",
    'test(',
    '  `<fail.b> slots=1: runs`,',
    ');',
  ].join('\n'),
);

function judge(tap: string, source = SOURCE) {
  const tags = lib.findTags([{ file: 'test/x.test.ts', text: t(source) }]);
  return lib.evaluate({ cells: lib.parseCells(DOC), tags, results: lib.parseTap(t(tap)) });
}

describe('contract check', () => {
  test('passing tests cover their cells; a pending cell may stay untested', () => {
    const r = judge('ok 1 - <fail.a> runs\n  ok 2 - <fail.b> slots=1: runs\nok 3 - <fail.b> slots=2: runs\n');
    assert.equal(r.covered, 2);
    assert.deepEqual(r.pending, ['time.c']);
    // The comment-only tag of a pending cell still claims a test that did not run.
    assert.deepEqual(r.notRun, ['time.c (test/x.test.ts:2)']);
    assert.deepEqual([r.missing, r.failing, r.skipped, r.unknown], [[], [], [], []]);
  });

  test('a skipped or todo test does not cover its cell', () => {
    for (const line of [
      'ok 1 - <fail.a> runs # SKIP',
      'ok 1 - <fail.a> runs # SKIP not today',
      'ok 1 - <fail.a> runs # TODO',
      'not ok 1 - <fail.a> runs # TODO',
    ]) {
      const r = judge(`${line}\nok 2 - <fail.b> slots=1: runs\n`);
      assert.equal(r.covered, 1, line);
      assert.equal(r.skipped.length, 1, line);
      assert.match(r.skipped[0]!, /^fail\.a /, line);
    }
    // One skipped instance spoils the cell even when another passes.
    const r = judge('ok 1 - <fail.a> runs\nok 2 - <fail.a> runs # SKIP\nok 3 - <fail.b> slots=1: runs\n');
    assert.deepEqual(r.skipped, ['fail.a (1 skipped, 0 todo)']);
  });

  test('an escaped # in a name is not a directive', () => {
    const r = judge('ok 1 - <fail.a> runs \\# SKIP is in the name\nok 2 - <fail.b> slots=1: runs\n');
    assert.equal(r.covered, 2);
    assert.deepEqual(r.skipped, []);
  });

  test('failures and unknown tags are reported', () => {
    const r = judge('not ok 1 - <fail.a> runs\nok 2 - <fail.b> slots=1: runs\nok 3 - <fail.zz> typo\n');
    assert.deepEqual(r.failing, ['fail.a (1 failing)']);
    assert.deepEqual(r.unknown, ['fail.zz']);
  });

  test('a tag only in a comment or a stray string is a test that did not run', () => {
    const source = `${SOURCE}\n// see <fail.b>\nconst note = '<fail.a>';\n`;
    const r = judge('', source);
    assert.deepEqual(r.missing, ['fail.a', 'fail.b']);
    assert.deepEqual(r.notRun, [
      'time.c (test/x.test.ts:2)',
      'fail.a (test/x.test.ts:4, test/x.test.ts:9)',
      'fail.b (test/x.test.ts:6, test/x.test.ts:8)',
    ]);
  });

  test('the refreshed doc links test names, not comments', () => {
    const tags = lib.findTags([{ file: 'test/x.test.ts', text: SOURCE }]);
    const doc = lib.refreshDoc(DOC, tags).split('\n');
    assert.equal(doc[1], '| `fail.a` | A. | Contract U. | [../test/x.test.ts:4](../test/x.test.ts#L4) |');
    assert.equal(doc[2], '| `fail.b` | B. | Contract U. | [../test/x.test.ts:6](../test/x.test.ts#L6) |');
    assert.equal(doc[3], '| `time.c` | C. | pending (later). | — |');
    assert.equal(lib.refreshDoc(lib.refreshDoc(DOC, tags), tags), lib.refreshDoc(DOC, tags));
  });
});
