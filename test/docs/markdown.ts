/** Reading the parts of a markdown doc that tests compare with the code: sections and table rows. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

/** A doc under docs/, by file name. */
export const readDoc = (name: string): string =>
  readFileSync(new URL(`../../../docs/${name}`, import.meta.url), 'utf8');

/** A markdown file by its path from the repository root (`README.md`, `docs/cli.md`). */
export const readMarkdown = (path: string): string =>
  readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8');

/** The text of the section under `heading` (`## X` or `### X`), up to the next heading of its level or above. */
export function section(doc: string, heading: string): string {
  const match = new RegExp(`^(#{2,3}) ${heading.replace(/[.*+?^${}()|[\]\\`]/g, '\\$&')}\\s*$`, 'm').exec(
    doc,
  );
  assert.ok(match, `the doc has no section "${heading}"`);
  const level = match[1]!.length;
  const rest = doc.slice(match.index + match[0].length);
  const next = new RegExp(`^#{2,${level}} `, 'm').exec(rest);
  return doc.slice(match.index, match.index + match[0].length + (next ? next.index : rest.length));
}

/**
 * The rows of the table in `text` whose header row starts with the cell `first`, each as its
 * trimmed cells (a `\|` inside a cell is no column break).
 */
export function tableRows(text: string, first: string): string[][] {
  const lines = text.split('\n');
  const start = lines.findIndex((line) => line.startsWith(`| ${first} |`));
  assert.ok(start >= 0, `no table headed "${first}"`);
  const rows: string[][] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .split(/(?<!\\)\|/)
        .slice(1, -1)
        .map((cell) => cell.trim()),
    );
  }
  return rows;
}

/** The names in a cell or a text written as code: "`a`, `b`" gives a and b. */
export const codeNames = (text: string): string[] => [...text.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);

/**
 * The commands of a doc's shell code blocks (```sh), in order, as a reader would paste them: lines
 * continued by a trailing backslash or by an open quote join the next, and lines that are only a
 * comment (sample output, notes) are no command.
 */
export function shellCommands(doc: string): string[] {
  const commands: string[] = [];
  for (const block of doc.matchAll(/^```(?:sh|bash|shell)\n([\s\S]*?)^```$/gm)) {
    let pending = '';
    for (const line of block[1]!.split('\n')) {
      if (pending === '' && (line.trim() === '' || line.trimStart().startsWith('#'))) continue;
      pending += pending === '' ? line : `\n${line}`;
      if (!line.endsWith('\\') && !insideQuotes(pending)) {
        commands.push(pending);
        pending = '';
      }
    }
    assert.equal(pending, '', `a shell block ends inside a command: ${pending}`);
  }
  return commands;
}

/** Whether a shell text ends inside a single- or double-quoted string. */
function insideQuotes(text: string): boolean {
  let quote = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote === "'") {
      if (c === "'") quote = '';
    } else if (c === '\\') i++;
    else if (quote === '"') {
      if (c === '"') quote = '';
    } else if (c === "'" || c === '"') quote = c;
    else if (c === '#' && (i === 0 || /\s/.test(text[i - 1]!))) {
      // A comment runs to the end of its line; its apostrophes open nothing.
      const end = text.indexOf('\n', i);
      if (end < 0) break;
      i = end;
    }
  }
  return quote !== '';
}
