/**
 * No function in src/ is longer than 100 lines, counted from its first line to its last (every
 * function, method, accessor, constructor and arrow; a nested one is counted on its own and inside
 * its parent too). Long functions were the review's measure of where the code had stopped being
 * split into named steps (house review 2026-12, §5); the few that are tables by nature are listed
 * below with their reason. The sources are parsed with the TypeScript compiler, so a brace in a
 * string or a comment cannot fool the count.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';

const ROOT = resolve('src');
const MAX_LINES = 100;

/**
 * Functions that declare a table rather than run steps: splitting them would scatter one list.
 * Keyed by `file:name` as the test names them; each needs its reason.
 */
const DECLARATIVE: ReadonlyMap<string, string> = new Map([
  ['observability/metrics.ts:Metrics.constructor', 'declares the metric table, one metric a statement'],
]);

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

interface Measured {
  name: string;
  line: number;
  lines: number;
}

/** A readable name: `Class.method`, the variable an arrow is assigned to, or `<anonymous>`. */
function nameOf(node: ts.FunctionLikeDeclaration, file: ts.SourceFile): string {
  const own = node.name?.getText(file);
  const parent = node.parent;
  const holder =
    ts.isClassLike(parent) && parent.name !== undefined
      ? `${parent.name.text}.`
      : ts.isClassLike(parent)
        ? '<class>.'
        : '';
  if (ts.isConstructorDeclaration(node)) return `${holder}constructor`;
  if (own !== undefined) return `${holder}${own}`;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))
    return parent.name.getText(file);
  return '<anonymous>';
}

function measure(path: string): Measured[] {
  const file = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: Measured[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const fn = node as ts.FunctionLikeDeclaration;
      const first = file.getLineAndCharacterOfPosition(fn.getStart(file)).line;
      const last = file.getLineAndCharacterOfPosition(fn.getEnd()).line;
      found.push({ name: nameOf(fn, file), line: first + 1, lines: last - first + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

test(`no function in src/ is longer than ${MAX_LINES} lines, declarative tables excepted`, () => {
  const measured = sources(ROOT).flatMap((path) =>
    measure(path).map((fn) => ({ ...fn, key: `${relative(ROOT, path)}:${fn.name}` })),
  );
  // The walk must have seen the code: thousands of functions, and the listed tables among them.
  assert.ok(measured.length > 1000, `${measured.length} functions measured`);
  for (const key of DECLARATIVE.keys())
    assert.ok(
      measured.some((fn) => fn.key === key),
      `${key} is listed as a table but no longer exists`,
    );
  const long = measured
    .filter((fn) => fn.lines > MAX_LINES && !DECLARATIVE.has(fn.key))
    .map((fn) => `${fn.key} (line ${fn.line}): ${fn.lines} lines`);
  assert.deepEqual(long, []);
});
