/**
 * No import cycle anywhere in src/ (type-only imports count: a cycle of types is a cycle of
 * meaning, and the next value import along it would run a module half-initialised). The graph is
 * read from the sources' relative `import ... from` and `export ... from` lines.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';

const ROOT = resolve('src');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** Every cycle found by a depth-first walk, each as the files along it. */
function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 'open') found.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of graph.keys()) if (!state.has(file)) visit(file);
  return found;
}

const IMPORT = /^\s*(?:import|export)\s[^'"]*?from\s+'(\.[^']+)'/gm;

test('src/ has no import cycle', () => {
  const files = sources(ROOT);
  const known = new Set(files);
  const graph = new Map(
    files.map((file) => {
      const text = readFileSync(file, 'utf8');
      const deps = [...text.matchAll(IMPORT)]
        .map((m) => resolve(dirname(file), m[1]!.replace(/\.js$/, '.ts')))
        .filter((dep) => known.has(dep));
      return [file, deps] as const;
    }),
  );
  assert.ok(graph.size > 100, `${graph.size} files read`);
  assert.ok(
    [...graph.values()].some((deps) => deps.length > 0),
    'imports were found',
  );
  assert.deepEqual(
    cycles(graph).map((cycle) => cycle.map((file) => relative(ROOT, file)).join(' -> ')),
    [],
  );
});

test('the cycle finder finds a cycle', () => {
  const graph = new Map([
    ['a', ['b']],
    ['b', ['c']],
    ['c', ['a']],
    ['d', ['a']],
  ]);
  assert.deepEqual(cycles(graph), [['a', 'b', 'c', 'a']]);
});
