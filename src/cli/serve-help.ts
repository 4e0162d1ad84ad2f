/** The `voxd serve --help` text: its option list is written from the settings table. */
import { type Flag, SETTING_GROUPS } from '../config/settings.js';

const USAGE = 'Usage: voxd serve [--config <file>] [options]';
const CLOSING = 'Every flag also takes the --flag=value form. Flags override the config file.';

/** Descriptions start in this column; longer flag columns would push them right. */
const DESCRIPTION_COLUMN = 32;

/** The help's lines for one flag, and for its negation (`--no-ui`) after it. */
function flagLines(flag: Flag): string[] {
  const names = [...(flag.aliases ?? []), flag.name].join(', ');
  const lines = entry(flag.arg === undefined ? names : `${names} ${flag.arg}`, flag.help);
  return flag.negation === undefined ? lines : [...lines, ...entry(flag.negation.name, flag.negation.help)];
}

function entry(left: string, help: readonly string[]): string[] {
  const head = `  ${left}`.padEnd(DESCRIPTION_COLUMN - 2);
  return help.map((line, i) => `${i === 0 ? `${head}  ` : ' '.repeat(DESCRIPTION_COLUMN)}${line}`);
}

export function renderServeHelp(): string {
  const sections = SETTING_GROUPS.flatMap((group) => {
    const lines = group.settings.flatMap((s) => (s.flag === undefined ? [] : flagLines(s.flag)));
    // A group of settings that have no flags (server.json only) is left out of the help.
    if (lines.length === 0) return [];
    return [group.heading === '' ? lines : [group.heading, ...lines]];
  });
  return [USAGE, ...sections.map((lines) => lines.join('\n')), CLOSING].join('\n\n') + '\n';
}
