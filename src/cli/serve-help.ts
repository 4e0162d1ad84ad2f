/**
 * The `voxd serve --help` text: its option list, and the default each flag states, are written
 * from the settings table.
 */
import { defaultSize, type Flag, SETTING_GROUPS, type Setting } from '../config/settings.js';

const USAGE = 'Usage: voxd serve [--config <file>] [options]';
const CLOSING = 'Every flag also takes the --flag=value form. Flags override the config file.';

/** Descriptions start in this column; longer flag columns would push them right. */
const DESCRIPTION_COLUMN = 32;

/** A description line the default is added to stays this short; else the default takes a line of its own. */
const DESCRIPTION_WIDTH = 76;

/**
 * The default as --help states it: `(default 8080)`, `(default on)` for a switch that is on,
 * `(default "")`, `(default 268435456, 256 MiB)` for a byte count, `(default: ...)` for a default
 * the table words (helpDefault). None for a setting without a default, or with a map or list one.
 */
export function helpDefault(setting: Setting): string | undefined {
  if (setting.flag?.helpDefault !== undefined) return `(default: ${setting.flag.helpDefault})`;
  const value = setting.default;
  let shown: string;
  if (typeof value === 'boolean') shown = value ? 'on' : 'off';
  else if (value === '') shown = '""';
  else if (typeof value === 'string' || typeof value === 'number') shown = String(value);
  else return undefined;
  const size = defaultSize(setting);
  return `(default ${size === undefined ? shown : `${shown}, ${size}`})`;
}

/** The help's description of a setting's flag: the table's lines, its default added to the last. */
export function flagDescription(setting: Setting): readonly string[] {
  const help = setting.flag?.help ?? [];
  const stated = helpDefault(setting);
  if (stated === undefined) return help;
  const last = help.at(-1);
  if (last === undefined) return [stated];
  if (`${last} ${stated}`.length > DESCRIPTION_WIDTH) return [...help, stated];
  return [...help.slice(0, -1), `${last} ${stated}`];
}

/** The help's lines for one flag, and for its negation (`--no-ui`) after it. */
function flagLines(setting: Setting, flag: Flag): string[] {
  const names = [...(flag.aliases ?? []), flag.name].join(', ');
  const lines = entry(flag.arg === undefined ? names : `${names} ${flag.arg}`, flagDescription(setting));
  return flag.negation === undefined ? lines : [...lines, ...entry(flag.negation.name, flag.negation.help)];
}

function entry(left: string, help: readonly string[]): string[] {
  const head = `  ${left}`.padEnd(DESCRIPTION_COLUMN - 2);
  return help.map((line, i) => `${i === 0 ? `${head}  ` : ' '.repeat(DESCRIPTION_COLUMN)}${line}`);
}

export function renderServeHelp(): string {
  const sections = SETTING_GROUPS.flatMap((group) => {
    const lines = group.settings.flatMap((s) => (s.flag === undefined ? [] : flagLines(s, s.flag)));
    // A group of settings that have no flags (server.json only) is left out of the help.
    if (lines.length === 0) return [];
    return [group.heading === '' ? lines : [group.heading, ...lines]];
  });
  return [USAGE, ...sections.map((lines) => lines.join('\n')), CLOSING].join('\n\n') + '\n';
}
