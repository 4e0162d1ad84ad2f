/**
 * Loads server.json (reference §3.1) and applies CLI overrides (§3.4). Overrides are merged before
 * validation so a bad `--port` is rejected by the same check as a bad `port`, and reported under the
 * flag's name so the user knows which of the two to fix.
 */
import { readFileSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { showValue } from '../errors.js';
import { keysFromConfig, keysFromEnv, keysFromFile, parseOpenEndpoints } from './api-keys.js';
import { defaultModelsRoot } from './data-dir.js';
import { EMBEDDED_MODELS } from './embedded-models.js';
import { ConfigError, expectBoolean, expectOneOf, expectString, isPlainObject, keyPath } from './errors.js';
import { checkFrontendOptions, type FrontendOptionSources, parseFrontendListener } from './frontends.js';
import { parseModelAliases } from './model-aliases.js';
import { keyNotice, LIVE_INGEST_DEFAULTS, parseLiveIngest, parseModelConfig } from './model-config.js';
import { toOptionMap } from './options.js';
import {
  type ConfigKey,
  type ConfigOf,
  checkRule,
  FILE_KEYS,
  type Flag,
  type OverridesOf,
  SETTINGS,
  type SettingEntry,
  setting,
} from './settings.js';
import type { Backend, ConfigNotice, ModelConfig, ServerConfig } from './types.js';

/**
 * Values given on the command line; anything set here wins over server.json. One field per
 * setting of the table (settings.ts) with a flag, of the type its flag's parser makes: `--port`
 * a number, `--file-roots` the comma-separated text, `--model-alias` a map (an empty id removes the
 * name). Relative paths in them resolve against the process cwd, not the config folder.
 */
export type CliOverrides = OverridesOf<SettingEntry>;

export interface LoadServerConfigOptions {
  configPath?: string;
  overrides: CliOverrides;
  knownFamilies: readonly string[];
  /** Where VOXD_API_KEYS and VOXD_ENABLE_FIXTURE are read. @default process.env */
  env?: NodeJS.ProcessEnv;
}

/** Every top-level key of server.json (the settings table's; docs/configuration.md is generated from it). */
export { FILE_KEYS };

/** The flag of each key that the command line can set too, named in errors about the flag's value. */
const FLAGS: ReadonlyMap<string, Flag> = new Map(
  SETTINGS.filter((s) => s.file && s.flag !== undefined).map((s) => [s.key!, s.flag!]),
);

const BACKEND_NAMES = ['cpu', 'cuda', 'hip', 'rocm', 'vulkan', 'metal'] as const;

/** Where a value came from: its key for messages and the folder its relative paths resolve against. */
interface Source {
  value: unknown;
  key: string;
  base: string;
}

/** The two places a setting is given, server.json and the command line (which wins). */
class Sources {
  readonly cwd = process.cwd();
  readonly configFile: string | undefined;
  readonly file: Record<string, unknown>;
  /** The folder the file's relative paths resolve against. */
  readonly baseDir: string;
  readonly overrides: CliOverrides;

  constructor(configPath: string | undefined, overrides: CliOverrides) {
    this.configFile = configPath === undefined ? undefined : path.resolve(this.cwd, configPath);
    this.file = this.configFile === undefined ? {} : readConfigFile(this.configFile);
    this.baseDir = this.configFile === undefined ? this.cwd : path.dirname(this.configFile);
    this.overrides = overrides;
  }

  source(name: string): Source {
    const flag = FLAGS.get(name);
    const cli = flag === undefined ? undefined : (this.overrides as Record<string, unknown>)[name];
    if (cli === undefined) return { value: this.file[name], key: name, base: this.baseDir };
    // `--no-ui` is the flag that set false; errors name the flag the user typed.
    const given = cli === false && flag!.negation !== undefined ? flag!.negation.name : flag!.name;
    return { value: cli, key: given, base: this.cwd };
  }

  /** The setting parsed from where it was given, or `fallback` when it was given nowhere. */
  read<T>(name: string, fallback: T, parse: (s: Source) => T): T {
    const s = this.source(name);
    return s.value === undefined ? fallback : parse(s);
  }
}

interface LoadContext {
  sources: Sources;
  notices: ConfigNotice[];
}

/**
 * Fields that steps below make of several sources, or of the command line and the environment
 * alone; the table loop leaves them (tableSettings).
 */
const COMPOSED = [
  'log',
  'log_file',
  'parallel_jobs',
  'enable_fixture',
  'model_spec_override',
  'voice_dir',
  'models_root',
  'frontend_options',
  'file_roots',
  'api_keys',
  'open_endpoints',
  'models',
  'model_aliases',
] as const satisfies readonly ConfigKey[];
const COMPOSED_KEYS: ReadonlySet<string> = new Set(COMPOSED);

/** The ServerConfig fields the table loop makes: every table key but the composed ones. */
type TableFields = Omit<ConfigOf<SettingEntry>, (typeof COMPOSED)[number]>;

/** How a table setting that its rule alone cannot check is read. */
interface OwnRead<K extends ConfigKey> {
  /** Checks a given value; wins over the table's rule. */
  parse?: (s: Source, ctx: LoadContext) => ServerConfig[K];
  /** The value when none is given, for a setting whose default the table cannot hold (it is computed). */
  fallback?: (ctx: LoadContext) => ServerConfig[K];
}

const OWN_READS: { readonly [K in ConfigKey]?: OwnRead<K> } = {
  backend: { parse: (s, { notices }) => parseBackend(s, notices) },
  device: { parse: parseDevice },
  // Without a config file every model arrives by registration, so nothing should load eagerly.
  lazy_load: { fallback: ({ sources }) => sources.configFile === undefined },
  log_request_body: { parse: parseLogRequestBody },
  live_ingest: {
    parse: (s) => ({ ...LIVE_INGEST_DEFAULTS, ...parseLiveIngest(s.value, s.key) }),
    fallback: () => ({ ...LIVE_INGEST_DEFAULTS }),
  },
  frontend_listener: { parse: (s) => parseFrontendListener(s.value, s.key) },
};

/**
 * Every table setting that is a ServerConfig field of its own, in the table's order: checked by
 * its rule (or its own read), else the table's default; an optional one without either stays out.
 */
function tableSettings(ctx: LoadContext): TableFields {
  const out: Record<string, unknown> = {};
  for (const entry of SETTINGS) {
    const key = entry.key as ConfigKey | undefined;
    if (key === undefined || entry.config === 'none' || COMPOSED_KEYS.has(key)) continue;
    const own = OWN_READS[key] as OwnRead<ConfigKey> | undefined;
    const rule = entry.rule!;
    const parse =
      own?.parse ?? (rule.kind === 'bespoke' ? undefined : (s: Source) => checkRule(rule, s.value, s.key));
    // A programming error: a new bespoke setting needs its read here or a composing step.
    if (parse === undefined)
      throw new Error(`setting ${key} has a bespoke rule and no read in server-config.ts`);
    const s = ctx.sources.source(key);
    const value = s.value === undefined ? (own?.fallback?.(ctx) ?? entry.default) : parse(s, ctx);
    if (value === undefined && entry.config === 'required') throw new Error(`setting ${key} has no default`);
    if (value !== undefined) out[key] = value;
  }
  if (out['wyoming_zeroconf'] !== undefined && out['wyoming_port'] === undefined)
    throw ConfigError.rejected(
      'wyoming_zeroconf',
      out['wyoming_zeroconf'],
      'it announces the Wyoming listener; set wyoming_port too',
    );
  return out as TableFields;
}

export function loadServerConfig(opts: LoadServerConfigOptions): {
  config: ServerConfig;
  notices: ConfigNotice[];
} {
  const sources = new Sources(opts.configPath, opts.overrides);
  const notices: ConfigNotice[] = [];
  for (const name of Object.keys(sources.file)) {
    if (!FILE_KEYS.has(name)) notices.push(keyNotice(name, name));
  }
  const env = opts.env ?? process.env;
  const config: ServerConfig = {
    ...tableSettings({ sources, notices }),
    ...flagOnlySettings(sources, env),
    base_dir: sources.baseDir,
    default_models_root: defaultModelsRoot(),
    // Set by the steps below, which read what the table loop made.
    models_root: '',
    frontend_options: {},
    file_roots: [],
    api_keys: [],
    open_endpoints: [],
    models: [],
    model_aliases: {},
  };
  readPaths(config, sources, notices);
  readListenerTls(config, sources, notices);
  config.file_roots = sources.read(
    'file_roots',
    defaultFileRoots(sources.configFile, config),
    parseFileRoots,
  );
  config.api_keys = [
    ...keysFromConfig(sources.file['api_keys']),
    ...sources.read('api_keys_file', [], (s) =>
      keysFromFile(path.resolve(s.base, expectString(s.value, s.key, { nonEmpty: true })), s.key),
    ),
    ...keysFromEnv(env['VOXD_API_KEYS']),
  ];
  config.open_endpoints = parseOpenEndpoints(sources.file['open_endpoints']);
  readModels(config, sources, opts.knownFamilies, notices);
  return { config, notices };
}

/** The settings only the command line (and the environment) set; server.json does not know them. */
function flagOnlySettings(
  { overrides, cwd }: Sources,
  env: NodeJS.ProcessEnv,
): Pick<ServerConfig, 'log' | 'log_file' | 'parallel_jobs' | 'enable_fixture'> {
  return {
    log: overrides.log === true,
    parallel_jobs: overrides.parallel_jobs === true,
    enable_fixture: overrides.enable_fixture === true || env['VOXD_ENABLE_FIXTURE'] === '1',
    ...(overrides.log_file === undefined
      ? {}
      : { log_file: path.resolve(cwd, expectString(overrides.log_file, '--log-file', { nonEmpty: true })) }),
  };
}

function parseDevice(s: Source, { notices }: LoadContext): number {
  const device = checkRule(setting('device').rule!, s.value, s.key) as number;
  if (device !== 0) {
    notices.push({
      key: s.key,
      message: `${s.key}: voxd engines run on the CPU; device ${device} is ignored`,
    });
  }
  return device;
}

function parseLogRequestBody(s: Source, { sources, notices }: LoadContext): boolean {
  const on = expectBoolean(s.value, s.key);
  if (on && sources.overrides.log !== true) {
    notices.push({ key: s.key, message: `${s.key}: request bodies are logged only with --log` });
  }
  return on;
}

/** model_spec_override, voice_dir and models_root: folders and files resolved against where they were given. */
function readPaths(config: ServerConfig, sources: Sources, notices: ConfigNotice[]): void {
  const specOverride = sources.read('model_spec_override', undefined, (s) => {
    const resolved = path.resolve(s.base, expectString(s.value, s.key, { nonEmpty: true }));
    notices.push({
      key: s.key,
      message: `${s.key}: voxd engines do not read model specs yet; the override is kept but has no effect`,
    });
    return resolved;
  });
  if (specOverride !== undefined) config.model_spec_override = specOverride;
  const voiceDir = sources.read('voice_dir', undefined, parseVoiceDir);
  if (voiceDir !== undefined) config.voice_dir = voiceDir;
  config.models_root = sources.read('models_root', config.default_models_root, (s) =>
    path.resolve(s.base, expectString(s.value, s.key, { nonEmpty: true })),
  );
}

/** HTTPS: tls_cert_file and tls_key_file, then the frontend listener's options, which may name them too. */
function readListenerTls(config: ServerConfig, sources: Sources, notices: ConfigNotice[]): void {
  const cert = sources.read('tls_cert_file', undefined, parsePemFile);
  const key = sources.read('tls_key_file', undefined, parsePemFile);
  if ((cert === undefined) !== (key === undefined)) {
    const [given, missing] =
      cert === undefined ? ['tls_key_file', 'tls_cert_file'] : ['tls_cert_file', 'tls_key_file'];
    throw ConfigError.rejected(
      given,
      (cert ?? key)!.path,
      `HTTPS needs both tls_cert_file and tls_key_file; ${missing} is missing`,
    );
  }
  if (cert !== undefined && key !== undefined) config.tls = { cert, key };
  const frontendOptions = sources.file['frontend_options'];
  const frontendSources = {
    file: frontendOptions === undefined ? {} : toOptionMap(frontendOptions, 'frontend_options'),
    cli: sources.overrides.frontend_options ?? {},
  };
  config.frontend_options = checkFrontendOptions(config.frontend_listener, frontendSources, notices);
  if (config.frontend_listener === 'https')
    config.tls = httpsListenerTls(config.tls, frontendSources, sources.baseDir);
}

/** The models (without a config file the embedded ones, lazily; with one exactly its models) and their aliases. */
function readModels(
  config: ServerConfig,
  sources: Sources,
  knownFamilies: readonly string[],
  notices: ConfigNotice[],
): void {
  const models = sources.configFile === undefined ? [...EMBEDDED_MODELS] : sources.file['models'];
  config.models = parseModels(models, config, knownFamilies, notices);
  config.model_aliases = parseModelAliases(
    {
      file: sources.file['model_aliases'],
      flags: sources.overrides.model_aliases,
      modelIds: config.models.map((m) => m.id),
      modelsRoot: config.models_root,
    },
    notices,
  );
}

function readConfigFile(configFile: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(configFile, 'utf8');
  } catch (err) {
    throw ConfigError.rejected('config', configFile, `cannot read the config file: ${errorText(err)}`);
  }
  let parsed: unknown;
  try {
    // Editors on Windows like to prepend a BOM, which JSON.parse rejects.
    parsed = JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch (err) {
    throw ConfigError.rejected('config', configFile, `the config file is not valid JSON: ${errorText(err)}`);
  }
  if (!isPlainObject(parsed)) {
    const kind = Array.isArray(parsed) ? 'an array' : parsed === null ? 'null' : typeof parsed;
    throw ConfigError.rejected('config', configFile, `the top level must be a JSON object, not ${kind}`);
  }
  return parsed;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function parseBackend(s: Source, notices: ConfigNotice[]): Backend {
  if (s.value === 'best') {
    throw ConfigError.rejected(
      s.key,
      s.value,
      `"best" is not allowed for the server; expected one of: ${BACKEND_NAMES.join(', ')}`,
    );
  }
  const name = expectOneOf(s.value, s.key, BACKEND_NAMES);
  const backend: Backend = name === 'rocm' ? 'hip' : name;
  // Accepted so audio.cpp configs load unchanged, but voxd has no accelerated engines to select.
  if (backend !== 'cpu') {
    notices.push({
      key: s.key,
      message: `${s.key}: voxd engines run on the CPU; backend "${name}" is ignored`,
    });
  }
  return backend;
}

/** A PEM file (certificate or key) read at startup, so a bad path stops startup with its name. */
function parsePemFile(s: Source): { path: string; pem: string } {
  const file = path.resolve(s.base, expectString(s.value, s.key, { nonEmpty: true }));
  let pem: string;
  try {
    pem = readFileSync(file, 'utf8');
  } catch {
    throw ConfigError.rejected(s.key, s.value, `cannot read ${file}`);
  }
  if (!pem.includes('-----BEGIN ')) throw ConfigError.rejected(s.key, s.value, `${file} is not a PEM file`);
  return { path: file, pem };
}

/**
 * Where requests may name server files when file_roots is not set: the config file's folder and
 * the voice library. Without a config file there is no folder the operator chose, so none.
 */
function defaultFileRoots(configFile: string | undefined, config: ServerConfig): string[] {
  if (configFile === undefined) return [];
  return uniqueRoots([config.base_dir, ...(config.voice_dir === undefined ? [] : [config.voice_dir])]);
}

/** A list of folders: a JSON array in the file, one comma-separated string from the flag. */
function parseFileRoots(s: Source): string[] {
  const list =
    typeof s.value === 'string' && s.key.startsWith('--')
      ? s.value.split(',').filter((part) => part !== '')
      : Array.isArray(s.value)
        ? s.value
        : undefined;
  if (list === undefined) throw ConfigError.invalid(s.key, s.value, 'a list of folders');
  const roots = list.map((entry, i) => {
    const key = Array.isArray(s.value) ? keyPath(s.key, i) : s.key;
    const dir = path.resolve(s.base, expectString(entry, key, { nonEmpty: true }));
    if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory())
      throw ConfigError.rejected(key, entry, `no such directory: ${dir}`);
    return dir;
  });
  return uniqueRoots(roots);
}

/** Roots with their symlinks resolved (a request's path is compared after its own are). */
function uniqueRoots(dirs: string[]): string[] {
  return [...new Set(dirs.map((dir) => realpathSync(dir)))];
}

function parseVoiceDir(s: Source): string {
  const dir = path.resolve(s.base, expectString(s.value, s.key, { nonEmpty: true }));
  const stat = statSync(dir, { throwIfNoEntry: false });
  if (!stat?.isDirectory()) throw ConfigError.rejected(s.key, s.value, `no such directory: ${dir}`);
  return dir;
}

/**
 * The `https` listener's certificate: its `cert_file`/`key_file` options (relative to the config
 * folder in server.json, to the cwd on the command line), or tls_cert_file/tls_key_file. It is the
 * same TLS either way, so naming it twice is an error rather than a silent choice.
 */
function httpsListenerTls(
  tls: ServerConfig['tls'],
  sources: FrontendOptionSources,
  baseDir: string,
): NonNullable<ServerConfig['tls']> {
  const option = (name: 'cert_file' | 'key_file') => {
    const fromCli = sources.cli[name] !== undefined;
    const value = fromCli ? sources.cli[name] : sources.file[name];
    if (value === undefined) return undefined;
    const key = fromCli ? `--frontend-option ${name}` : `frontend_options.${name}`;
    return parsePemFile({ value, key, base: fromCli ? process.cwd() : baseDir });
  };
  const cert = option('cert_file');
  const key = option('key_file');
  if (cert === undefined && key === undefined) {
    if (tls) return tls;
    throw ConfigError.rejected(
      'frontend_listener',
      'https',
      'the https listener needs frontend_options cert_file and key_file (--frontend-option cert_file=<pem> --frontend-option key_file=<pem>), or tls_cert_file and tls_key_file',
    );
  }
  if (tls)
    throw ConfigError.rejected(
      'frontend_options',
      { cert_file: cert?.path, key_file: key?.path },
      'tls_cert_file/tls_key_file already set the certificate; keep one of the two',
    );
  if (cert === undefined || key === undefined) {
    const [given, missing] = cert === undefined ? ['key_file', 'cert_file'] : ['cert_file', 'key_file'];
    throw ConfigError.rejected(
      `frontend_options.${given}`,
      (cert ?? key)!.path,
      `the https listener needs both cert_file and key_file; ${missing} is missing`,
    );
  }
  return { cert, key };
}

function parseModels(
  raw: unknown,
  config: ServerConfig,
  knownFamilies: readonly string[],
  notices: ConfigNotice[],
): ModelConfig[] {
  // With ui_management every model may arrive by registration, so the list may be absent or empty.
  if (raw === undefined) {
    if (config.ui_management) return [];
    throw ConfigError.missing('models', 'an array of model objects (required unless ui_management is true)');
  }
  if (!Array.isArray(raw)) throw ConfigError.invalid('models', raw, 'an array of model objects');
  if (raw.length === 0 && !config.ui_management) {
    throw ConfigError.invalid('models', raw, 'at least one model (an empty list needs ui_management)');
  }
  const firstIndex = new Map<string, number>();
  return raw.map((entry, index) => {
    const key = keyPath('models', index);
    const parsed = parseModelConfig(entry, {
      key,
      baseDir: config.base_dir,
      lazyDefault: config.lazy_load,
      parallel: config.parallel_jobs,
      knownFamilies,
    });
    const first = firstIndex.get(parsed.model.id);
    if (first !== undefined) {
      const idKey = keyPath(key, 'id');
      throw new ConfigError(
        idKey,
        parsed.model.id,
        `${idKey}: ${showValue(parsed.model.id)} is a duplicate of models[${first}].id`,
      );
    }
    firstIndex.set(parsed.model.id, index);
    notices.push(...parsed.notices);
    return parsed.model;
  });
}
