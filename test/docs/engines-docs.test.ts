/**
 * The engines a user reads about are the engines voxd has: docs/engines.md's family table lists
 * every family of the engine catalogue with its tasks and capacity, its package table every package
 * of src/models/catalog.json with its family and task, and every family either doc names exists.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { TASK_TOKENS } from '../../src/config/types.js';
import { createEngineCatalog } from '../../src/engines/catalog.js';
import { codeNames, readDoc, section, tableRows } from './markdown.js';

const ENGINES = readDoc('engines.md');
const CONFIGURATION = readDoc('configuration.md');
const catalog = createEngineCatalog();
const families = [...catalog.keys()].sort();
const packages = (
  JSON.parse(readFileSync(new URL('../../../src/models/catalog.json', import.meta.url), 'utf8')) as {
    packages: { id: string; family: string; task: string }[];
  }
).packages;

const sorted = (values: Iterable<string>) => [...values].sort();

/** A family named in prose: a code span that reads like one (`whisper_asr`, `silero_vad`). */
const FAMILY_LIKE = /`([a-z][a-z0-9]*(?:_[a-z0-9]+)*_(?:tts|asr|vad|diar|tdt))`/g;

test('the family table of engines.md lists every family of the catalogue, with its tasks and capacity', () => {
  const rows = tableRows(ENGINES, 'family');
  assert.deepEqual(sorted(rows.map((cells) => codeNames(cells[0]!)[0]!)), families);
  for (const [name, tasks, , capacity] of rows) {
    const family = catalog.get(codeNames(name!)[0]!)!;
    const documented = tasks === 'all' ? [...TASK_TOKENS] : codeNames(tasks!);
    assert.deepEqual(sorted(documented), sorted(family.tasks), `tasks of ${family.name}`);
    // A fixed capacity is a number; a configurable one names its default, the family's most.
    const max = String(family.maxCapacity);
    assert.ok(capacity === max || capacity!.includes(`(default ${max})`), `capacity of ${family.name}`);
  }
});

test('every family but the fixture has its section in engines.md, and every family-named section is a family', () => {
  const headings = [...ENGINES.matchAll(/^#{2,3} ([a-z][a-z0-9_]*)\s*$/gm)].map((m) => m[1]!);
  for (const name of headings)
    assert.ok(catalog.has(name), `engines.md has a section for ${name}, not a family`);
  // The fixture test engine has a doc of its own, linked from its row.
  assert.ok(ENGINES.includes('[fixture-engine.md](fixture-engine.md)'));
  assert.deepEqual(sorted(headings), sorted(families.filter((name) => name !== 'fixture')));
});

test("engines.md's word-times table says of every recognition family whether it gives words, and why not", () => {
  const rows = tableRows(section(ENGINES, 'Word times'), 'family');
  const asr = families.filter((name) => (catalog.get(name)!.tasks as readonly string[]).includes('asr'));
  assert.deepEqual(sorted(rows.map((cells) => codeNames(cells[0]!)[0]!)), sorted(asr));
  for (const [name, words, why] of rows) {
    assert.match(words!, /^(yes|no|with .*)$/, `${name}: words is yes, no or says when`);
    assert.ok(why && why.length > 10, `${name}: the table says how or why not`);
  }
});

test('the package table of engines.md lists every package of the models catalogue, with its family and task', () => {
  const rows = tableRows(section(ENGINES, 'Packages in the catalogue'), 'package');
  const documented = rows.map((cells) => cells.map((cell) => codeNames(cell).join(',')).join(' '));
  const catalogued = packages.map((p) => `${p.id} ${p.family} ${p.task}`);
  assert.deepEqual(sorted(documented), sorted(catalogued));
});

test('every package of the models catalogue loads with a family of the engine catalogue that does its task', () => {
  for (const p of packages) {
    const family = catalog.get(p.family);
    assert.ok(family, `${p.id}: no family ${p.family}`);
    assert.ok(
      (family.tasks as readonly string[]).includes(p.task),
      `${p.id}: ${p.family} does not do ${p.task}`,
    );
  }
});

test('every family that engines.md or configuration.md names is a family of the catalogue', () => {
  for (const [doc, text] of [
    ['engines.md', ENGINES],
    ['configuration.md', CONFIGURATION],
  ] as const) {
    const named = [...text.matchAll(FAMILY_LIKE), ...text.matchAll(/family [`']([a-z0-9_]+)[`']/g)].map(
      (m) => m[1]!,
    );
    for (const name of new Set(named))
      assert.ok(catalog.has(name), `${doc} names ${name}, which is no family`);
  }
});

test("configuration.md's family key lists exactly the catalogue's families", () => {
  const row = tableRows(section(CONFIGURATION, 'Per-model keys (`models[i]`)'), 'Key').find(
    (cells) => cells[0] === '`family`',
  );
  assert.ok(row, 'configuration.md has no family row');
  const list = /\(this build: ([^)]*)\)/.exec(row[3]!);
  assert.ok(list, "the family row does not list this build's families");
  assert.deepEqual(sorted(codeNames(list[1]!)), families);
});

test("configuration.md's isolation section names the families whose default is one shared engine", () => {
  const bullet = /The default of the ([\s\S]*?)\n- /.exec(section(CONFIGURATION, 'Isolation'));
  assert.ok(bullet, 'configuration.md no longer says which families default to "model"');
  const shared = families.filter(
    (name) => name !== 'fixture' && catalog.get(name)!.isolations?.[0] === 'model',
  );
  assert.deepEqual(sorted(codeNames(bullet[1]!)), shared);
});
