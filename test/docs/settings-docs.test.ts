/**
 * The settings a user reads about are the settings voxd has: docs/configuration.md's settings
 * tables are what the settings table writes (scripts/settings-docs.mjs), every top-level server.json
 * key is in the key table and the other way round, and the flags of `voxd serve`, its --help text
 * and the docs' flag table name the same flags.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SERVE_HELP, serveFlags } from '../../src/cli/args.js';
import { flagDescription } from '../../src/cli/serve-help.js';
import { FILE_KEYS } from '../../src/config/server-config.js';
import { checkRule, SETTINGS } from '../../src/config/settings.js';
import { writeSettingsDoc } from '../../src/config/settings-docs.js';
import { section as docSection, readDoc } from './markdown.js';

const DOC = readDoc('configuration.md');

test('the settings tables of docs/configuration.md are what scripts/settings-docs.mjs writes from the settings table', () => {
  // On failure: npx tsc -p tsconfig.json && node scripts/settings-docs.mjs --write
  assert.equal(DOC, writeSettingsDoc(DOC));
});

test('every default in the settings table passes its own rule', () => {
  for (const s of SETTINGS) {
    if (s.rule === undefined || s.rule.kind === 'bespoke' || s.default === undefined) continue;
    assert.equal(checkRule(s.rule, s.default, s.key!), s.default, s.key);
  }
});

test('the defaults --help states are the defaults of the settings table', () => {
  const shown = (value: unknown) =>
    typeof value === 'boolean' ? (value ? 'on' : 'off') : value === '' ? '""' : String(value);
  let checked = 0;
  for (const s of SETTINGS) {
    if (s.flag === undefined) continue;
    const stated = /\(default ([^,;)]+)/.exec(flagDescription(s).join(' '));
    if (stated === null) continue;
    assert.equal(stated[1], shown(s.default), s.flag.name);
    checked++;
  }
  // Most flags state their default; a help that stopped doing so would pass with nothing checked.
  assert.ok(checked > 20, `only ${checked} flags state a default`);
});

const section = (heading: string) => docSection(DOC, heading);

/** The first cell of each row of `text`'s tables that have `columns` columns (not their headers). */
const firstCells = (text: string, columns: number) =>
  text
    .split('\n')
    .filter((line) => line.startsWith('| ') && !/^\|\s*(Key|Flag)\s*\|/.test(line))
    .map((line) => line.split(/(?<!\\)\|/).slice(1, -1)) // a `\|` inside a cell is no column
    .filter((cells) => cells.length === columns && !cells[0]!.trim().startsWith('---'))
    .map((cells) => cells[0]!);

const sorted = (values: Iterable<string>) => [...new Set(values)].sort();

test('every server.json key is in the docs key table, and the table lists no other', () => {
  // The five-column table; the live_ingest limits below it are a table of their own.
  const documented = firstCells(section('Top-level keys'), 5).flatMap((cell) =>
    [...cell.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!),
  );
  assert.deepEqual(sorted(documented), sorted(FILE_KEYS));
});

test('voxd serve, its --help and the docs flag table name the same flags', () => {
  // -h is --help's short form; --help is what prints the help, so the help need not list it.
  const parsed = sorted(serveFlags().filter((flag) => flag.startsWith('--')));
  const help = sorted(['--help', ...[...SERVE_HELP.matchAll(/^\s+(--[a-z][a-z-]*)/gm)].map((m) => m[1]!)]);
  const documented = sorted(
    firstCells(section('Command line: `voxd serve`'), 3).flatMap((cell) =>
      [...cell.matchAll(/(--[a-z][a-z-]*)/g)].map((m) => m[1]!),
    ),
  );
  assert.deepEqual(help, parsed, '--help');
  assert.deepEqual(documented, parsed, 'docs/configuration.md');
});
