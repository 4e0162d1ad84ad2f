/**
 * Command-line flags of `voxd serve` (audio.cpp server flags, reference §3.4). This only parses;
 * ranges and paths are checked by loadServerConfig so a flag and its config key share one rule.
 */
import { ConfigError } from '../config/errors.js';
import type { CliOverrides } from '../config/server-config.js';
import { type Flag, SETTINGS, type Setting } from '../config/settings.js';
import { renderServeHelp } from './serve-help.js';

export interface ServeArgs {
  configPath?: string;
  overrides: CliOverrides;
  help: boolean;
  version: boolean;
}

/** The --help text; its option list comes from the settings table (src/config/settings.ts). */
export const SERVE_HELP = renderServeHelp();

type Apply = (out: ServeArgs, value: string, flag: string) => void;

/** Where a flag's value goes: ServeArgs' own fields for --config and the like, else the override of its key. */
function assign(setting: Setting, flag: Flag): (out: ServeArgs, value: unknown) => void {
  if (flag.to === 'configPath') {
    return (out, value) => {
      out.configPath = value as string;
    };
  }
  if (flag.to === 'help' || flag.to === 'version') {
    const field = flag.to;
    return (out) => {
      out[field] = true;
    };
  }
  const key = setting.key as keyof CliOverrides;
  return (out, value) => {
    (out.overrides as Record<string, unknown>)[key] = value;
  };
}

function valueFlag(setting: Setting, flag: Flag): Apply {
  const set = assign(setting, flag);
  switch (flag.value) {
    case 'integer':
      return (out, value, name) => set(out, parseInteger(value, name));
    case 'text':
      return (out, value) => set(out, value);
    case 'path':
      return (out, value, name) => set(out, nonEmpty(value, name));
    case 'pair':
      return (out, value, name) => {
        const eq = value.indexOf('=');
        if (eq <= 0) throw ConfigError.invalid(name, value, 'key=value with a non-empty key');
        const map = (out.overrides as Record<string, unknown>)[setting.key!] as
          | Record<string, string>
          | undefined;
        // A computed key defines an own property, so "__proto__=x" stays an ordinary option.
        set(out, { ...map, [value.slice(0, eq)]: value.slice(eq + 1) });
      };
    case 'switch':
      throw new Error(`${flag.name} is a switch`);
  }
}

const SWITCHES = new Map<string, (out: ServeArgs) => void>();
const VALUE_FLAGS = new Map<string, Apply>();
for (const setting of SETTINGS) {
  const flag = setting.flag;
  if (flag === undefined) continue;
  const names = [flag.name, ...(flag.aliases ?? [])];
  if (flag.value === 'switch') {
    const set = assign(setting, flag);
    for (const name of names) SWITCHES.set(name, (out) => set(out, true));
    if (flag.negation !== undefined) SWITCHES.set(flag.negation.name, (out) => set(out, false));
  } else {
    for (const name of names) VALUE_FLAGS.set(name, valueFlag(setting, flag));
  }
}

/** The flags of `voxd serve`, as the parser knows them. */
export const serveFlags = (): string[] => [...SWITCHES.keys(), ...VALUE_FLAGS.keys()];

/** Parses the arguments after `serve`; throws ConfigError keyed by the flag on any problem. */
export function parseServeArgs(argv: readonly string[]): ServeArgs {
  const out: ServeArgs = { overrides: {}, help: false, version: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    const inline = eq > 0 ? arg.slice(eq + 1) : undefined;

    const toggle = SWITCHES.get(flag);
    if (toggle) {
      if (inline !== undefined) throw ConfigError.rejected(flag, inline, `${flag} takes no value`);
      toggle(out);
      continue;
    }
    const apply = VALUE_FLAGS.get(flag);
    if (!apply) {
      const what = flag.startsWith('-')
        ? `unknown flag ${flag}`
        : `unexpected argument ${JSON.stringify(flag)}`;
      throw new ConfigError(flag, arg, `${what}; run voxd --help`);
    }
    let value = inline;
    if (value === undefined) {
      // A following flag means the value was forgotten; "-1" is still taken as a (bad) number.
      const next = argv[i + 1];
      if (next === undefined || next.startsWith('--')) {
        throw new ConfigError(flag, undefined, `${flag} needs a value; run voxd --help`);
      }
      value = next;
      i++;
    }
    apply(out, value, flag);
  }
  return out;
}

/** The whole text must be a decimal integer: "12x", "1.5", "0x10" and "" are all rejected. */
function parseInteger(value: string, flag: string): number {
  if (!/^[+-]?\d+$/.test(value)) throw ConfigError.invalid(flag, value, 'an integer');
  return Number(value);
}

function nonEmpty(value: string, flag: string): string {
  if (value.length === 0) throw ConfigError.invalid(flag, value, 'a non-empty path');
  return value;
}
