/**
 * The parts of docs/configuration.md that the settings table (settings.ts) writes: the top-level key
 * table, the live_ingest sub-key table and the `voxd serve` flag table. Each sits between
 * `<!-- settings:NAME:begin -->` and `<!-- settings:NAME:end -->`; scripts/settings-docs.mjs
 * rewrites them and test/docs/settings-docs.test.ts fails when the doc differs from what it writes.
 */
import { LIVE_INGEST_DEFAULTS } from './model-config.js';
import { defaultSize, type Flag, SETTINGS, type Setting } from './settings.js';

const code = (text: string) => `\`${text}\``;

/** Joins names as prose: `a`, `b` and `c`. */
function prose(items: readonly string[]): string {
  return items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}

/** A table row; an empty cell is `| |`, as the hand-written tables had them. */
const row = (cells: readonly string[]) =>
  `|${cells.map((cell) => (cell === '' ? ' ' : ` ${cell} `)).join('|')}|`;

function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  return [row(header), row(header.map(() => '---')).replaceAll(' ', ''), ...rows.map(row)].join('\n');
}

/** A default as the key table shows it: the JSON value (a byte count's size beside it), or `none` when the key has none. */
function defaultCell(setting: Setting): string {
  if (setting.doc?.default !== undefined) return setting.doc.default;
  if (setting.default === undefined) return 'none';
  const value = code(JSON.stringify(setting.default, null, 1).replace(/\n\s*/g, ''));
  const size = defaultSize(setting);
  return size === undefined ? value : `${value} (${size})`;
}

function keyTable(): string {
  const rows = SETTINGS.filter((s) => s.file).map((s) => {
    const doc = s.doc;
    if (doc === undefined) throw new Error(`setting ${s.key} has no docs row`);
    return [code(s.key!), doc.type, defaultCell(s), doc.allowed, doc.meaning];
  });
  const flagOnly = SETTINGS.filter((s) => !s.file && s.key !== undefined && s.flag !== undefined);
  return [
    table(['Key', 'Type', 'Default', 'Allowed', 'Meaning'], rows),
    '',
    `${prose(flagOnly.map((s) => code(s.key!)))} are flags only (${flagOnly.map((s) => code(s.flag!.name)).join(', ')}); ` +
      'in the file they are unknown keys.',
  ].join('\n');
}

function liveIngestTable(): string {
  return table(
    ['Sub-key', 'Default'],
    Object.entries(LIVE_INGEST_DEFAULTS).map(([key, value]) => [code(key), code(String(value))]),
  );
}

/** The flag as the docs table names it; a `|` in its argument would end the cell. */
function flagCell(flag: Flag): string {
  const names = [...(flag.aliases ?? []), flag.name].map(code).join(', ');
  const main = flag.arg === undefined ? names : code(`${flag.name} ${flag.arg.replaceAll('|', '\\|')}`);
  return flag.negation === undefined ? main : `${main} / ${code(flag.negation.name)}`;
}

function flagTable(): string {
  const rows = SETTINGS.filter((s) => s.flag !== undefined).map((s) => [
    flagCell(s.flag!),
    s.file ? code(s.key!) : '',
    s.flag!.note ?? '',
  ]);
  const noFlag = SETTINGS.filter((s) => s.file && s.flag === undefined).map((s) => code(s.key!));
  return [table(['Flag', 'File key', 'Notes'], rows), '', `${prose(noFlag)} have no flags.`].join('\n');
}

/** The generated sections of docs/configuration.md, by marker name. */
export const SETTINGS_DOC_SECTIONS: Readonly<Record<string, () => string>> = {
  keys: keyTable,
  'live-ingest': liveIngestTable,
  flags: flagTable,
};

/**
 * The doc with every generated section replaced by what the table says now. A marker pair that is
 * missing is an error, so a section cannot silently stop being generated.
 */
export function writeSettingsDoc(doc: string): string {
  let out = doc;
  for (const [name, render] of Object.entries(SETTINGS_DOC_SECTIONS)) {
    const begin = `<!-- settings:${name}:begin -->`;
    const end = `<!-- settings:${name}:end -->`;
    const from = out.indexOf(begin);
    const to = out.indexOf(end, from);
    if (from < 0 || to < 0) throw new Error(`docs/configuration.md lacks the markers ${begin} ... ${end}`);
    out = `${out.slice(0, from + begin.length)}\n${render()}\n${out.slice(to)}`;
  }
  return out;
}
