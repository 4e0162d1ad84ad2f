/**
 * ServerConfig and CliOverrides are derived from the settings table (src/config/settings.ts):
 * the type checks below fail the build when a derived field is not what the table's rule and flag
 * make it, and the tests below them check at run time that the loader makes what the types say:
 * every setting the types put in ServerConfig is there, with the table's default when nothing sets
 * it, and every flag's default is stated by --help.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { SERVE_HELP } from '../../src/cli/args.js';
import { flagDescription, helpDefault } from '../../src/cli/serve-help.js';
import type { ApiKey } from '../../src/config/api-keys.js';
import { type CliOverrides, loadServerConfig } from '../../src/config/server-config.js';
import { type ConfigKey, SETTINGS, type Setting } from '../../src/config/settings.js';
import type {
  Backend,
  LiveIngestConfig,
  ModelConfig,
  OptionMap,
  ServerConfig,
} from '../../src/config/types.js';
import type { LogLevel } from '../../src/observability/log-levels.js';

// ---- Types: a wrong derivation is a compile error here (tsc builds the tests). ----

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
/** Compiles only when T is true. */
const holds = <T extends true>(): T => true as T;
type IsOptional<T, K extends keyof T> = Partial<Pick<T, K>> extends Pick<T, K> ? true : false;

// A rule's type: counts and integers are numbers, oneOf its values, bespoke what its code makes.
holds<Equal<ServerConfig['port'], number>>();
holds<Equal<ServerConfig['max_request_body_bytes'], number>>();
holds<Equal<ServerConfig['ui'], boolean>>();
holds<Equal<ServerConfig['host'], string>>();
holds<Equal<ServerConfig['cors_origins'], '' | '*'>>();
holds<Equal<ServerConfig['log_level'], LogLevel>>();
holds<Equal<ServerConfig['default_speech_format'], 'wav' | 'pcm' | 'mp3' | 'opus' | 'aac' | 'flac'>>();
holds<Equal<ServerConfig['backend'], Backend>>();
holds<Equal<ServerConfig['models'], ModelConfig[]>>();
holds<Equal<ServerConfig['live_ingest'], LiveIngestConfig>>();
holds<Equal<ServerConfig['frontend_options'], OptionMap>>();
holds<Equal<ServerConfig['api_keys'], ApiKey[]>>();
holds<Equal<ServerConfig['file_roots'], string[]>>();
holds<Equal<ServerConfig['model_aliases'], Readonly<Record<string, string>>>>();
// Optional where the table says so, required elsewhere; `none` settings are no field at all.
holds<IsOptional<ServerConfig, 'voice_dir'>>();
holds<IsOptional<ServerConfig, 'log_file'>>();
holds<IsOptional<ServerConfig, 'model_spec_override'>>();
holds<Equal<IsOptional<ServerConfig, 'models_root'>, false>>();
holds<Equal<'tls_cert_file' extends keyof ServerConfig ? true : false, false>>();
holds<Equal<'api_keys_file' extends keyof ServerConfig ? true : false, false>>();
// The fields no setting makes are ServerConfig's own.
holds<Equal<Exclude<keyof ServerConfig, ConfigKey>, 'default_models_root' | 'tls' | 'base_dir'>>();
// A flag's type is what its parser makes; settings without a flag are no override.
holds<Equal<CliOverrides['port'], number | undefined>>();
holds<Equal<CliOverrides['file_roots'], string | undefined>>();
holds<Equal<CliOverrides['log_level'], string | undefined>>();
holds<Equal<CliOverrides['ui'], boolean | undefined>>();
holds<Equal<CliOverrides['model_aliases'], Record<string, string> | undefined>>();
holds<Equal<CliOverrides['tls_cert_file'], string | undefined>>();
holds<Equal<'lazy_load' | 'models' | 'api_keys' extends keyof CliOverrides ? true : false, false>>();
holds<IsOptional<CliOverrides, 'host'>>();

// ---- Run time: the loader makes what the types say. ----

const keyed = SETTINGS.filter((s): s is Setting & { key: string } => s.key !== undefined);

function loadMinimal() {
  const dir = mkdtempSync(path.join(tmpdir(), 'voxd-settings-'));
  try {
    const configPath = path.join(dir, 'server.json');
    const models = [{ id: 'a', family: 'fixture', path: 'm/a' }];
    writeFileSync(configPath, JSON.stringify({ models }));
    return loadServerConfig({ configPath, overrides: {}, knownFamilies: ['fixture'], env: {} }).config;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('every setting the types put in ServerConfig is in a loaded config, and no other', () => {
  const config = loadMinimal() as unknown as Record<string, unknown>;
  const required = keyed.filter((s) => s.config === 'required').map((s) => s.key);
  const none = keyed.filter((s) => s.config === 'none').map((s) => s.key);
  // Every keyed setting says how it is in ServerConfig (define() writes it).
  assert.deepEqual(
    keyed.filter((s) => s.config === undefined).map((s) => s.key),
    [],
  );
  for (const key of required) assert.ok(key in config, `${key} is missing from the loaded config`);
  for (const key of none) assert.ok(!(key in config), `${key} is in the loaded config`);
  const own = ['default_models_root', 'base_dir'];
  const optional = keyed.filter((s) => s.config === 'optional').map((s) => s.key);
  const unknown = Object.keys(config).filter((key) => ![...required, ...optional, ...own].includes(key));
  assert.deepEqual(unknown, []);
  assert.ok(required.length > 40, `only ${required.length} required settings`);
});

test('a setting nothing sets has the default of the table, of the type its field declares', () => {
  const config = loadMinimal() as unknown as Record<string, unknown>;
  let checked = 0;
  for (const s of keyed) {
    if (s.default === undefined || s.config === 'none') continue;
    assert.deepEqual(config[s.key], s.default, s.key);
    // The field's type, from the rule, is the default's: a number for counts, a listed value for oneOf.
    const rule = s.rule!;
    if (rule.kind === 'count' || rule.kind === 'integer') assert.equal(typeof s.default, 'number', s.key);
    if (rule.kind === 'boolean') assert.equal(typeof s.default, 'boolean', s.key);
    if (rule.kind === 'oneOf') assert.ok(rule.values.includes(s.default as string), s.key);
    if (rule.kind === 'string' || rule.kind === 'ip') assert.equal(typeof s.default, 'string', s.key);
    checked++;
  }
  assert.ok(checked > 35, `only ${checked} defaults checked`);
});

/** The lines of the flag's own entry in --help: its first line and the indented ones after it. */
function helpEntry(flag: string): string {
  const lines = SERVE_HELP.split('\n');
  const start = lines.findIndex((line) => line.startsWith(`  ${flag} `) || line === `  ${flag}`);
  assert.ok(start >= 0, `--help lacks ${flag}`);
  const rest = lines.slice(start + 1);
  const end = rest.findIndex((line) => !line.startsWith(' '.repeat(32)));
  return [lines[start], ...rest.slice(0, end < 0 ? rest.length : end)].join('\n');
}

test("every flag of a setting with a default states the table's default in its own --help entry", () => {
  const shown = (s: Setting) => {
    if (s.flag!.helpDefault !== undefined) return `(default: ${s.flag!.helpDefault})`;
    const value = s.default;
    const text = typeof value === 'boolean' ? (value ? 'on' : 'off') : value === '' ? '""' : String(value);
    return `(default ${text}`;
  };
  let checked = 0;
  for (const s of SETTINGS) {
    if (s.flag === undefined) continue;
    const scalar = ['string', 'number', 'boolean'].includes(typeof s.default);
    if (!scalar && s.flag.helpDefault === undefined) {
      assert.equal(helpDefault(s), undefined, s.flag.name);
      continue;
    }
    const entry = helpEntry([...(s.flag.aliases ?? []), s.flag.name].join(', '));
    assert.ok(entry.includes(shown(s)), `${s.flag.name}: ${JSON.stringify(entry)} lacks ${shown(s)}`);
    assert.ok(flagDescription(s).join('\n').includes(shown(s)), s.flag.name);
    checked++;
  }
  assert.ok(checked > 35, `only ${checked} flags checked`);
});

test('a byte count states its size beside its default, and the help lines of the table state no default themselves', () => {
  assert.match(helpEntry('--max-request-body-bytes'), /\(default 268435456, 256 MiB\)/);
  assert.match(helpEntry('--max-download-bytes'), /\(default 17179869184, 16 GiB\)/);
  assert.match(helpEntry('--ui'), /\(default on\)/);
  assert.match(helpEntry('--cors-origins'), /\(default ""\)/);
  // A default written into the help by hand would be a second source, free to drift from the table.
  for (const s of SETTINGS) {
    for (const line of s.flag?.help ?? []) assert.doesNotMatch(line, /\(default/, s.flag!.name);
  }
});
