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

export function loadServerConfig(opts: LoadServerConfigOptions): {
  config: ServerConfig;
  notices: ConfigNotice[];
} {
  const { overrides } = opts;
  const cwd = process.cwd();
  const configFile = opts.configPath === undefined ? undefined : path.resolve(cwd, opts.configPath);
  const file = configFile === undefined ? {} : readConfigFile(configFile);
  const baseDir = configFile === undefined ? cwd : path.dirname(configFile);
  const notices: ConfigNotice[] = [];
  for (const name of Object.keys(file)) {
    if (!FILE_KEYS.has(name)) notices.push(keyNotice(name, name));
  }

  const source = (name: string): Source => {
    const flag = FLAGS.get(name);
    const cli = flag === undefined ? undefined : (overrides as Record<string, unknown>)[name];
    if (cli === undefined) return { value: file[name], key: name, base: baseDir };
    // `--no-ui` is the flag that set false; errors name the flag the user typed.
    const given = cli === false && flag!.negation !== undefined ? flag!.negation.name : flag!.name;
    return { value: cli, key: given, base: cwd };
  };
  const read = <T>(name: string, fallback: T, parse: (s: Source) => T): T => {
    const s = source(name);
    return s.value === undefined ? fallback : parse(s);
  };
  /** A setting the table's rule checks, with the table's default. */
  const ruled = <K extends ConfigKey>(name: K): ServerConfig[K] => {
    const { rule, default: fallback } = setting(name);
    return read(name, fallback, (s) => checkRule(rule!, s.value, s.key)) as ServerConfig[K];
  };

  const config: ServerConfig = {
    host: ruled('host'),
    port: ruled('port'),
    wyoming_host: ruled('wyoming_host'),
    cors_origins: ruled('cors_origins'),
    allowed_hosts: ruled('allowed_hosts'),
    ui: ruled('ui'),
    ui_management: ruled('ui_management'),
    backend: read('backend', setting('backend').default!, (s) => parseBackend(s, notices)),
    device: read('device', setting('device').default!, (s) => {
      const device = checkRule(setting('device').rule!, s.value, s.key) as number;
      if (device !== 0) {
        notices.push({
          key: s.key,
          message: `${s.key}: voxd engines run on the CPU; device ${device} is ignored`,
        });
      }
      return device;
    }),
    threads: ruled('threads'),
    // Without a config file every model arrives by registration, so nothing should load eagerly.
    lazy_load: read('lazy_load', configFile === undefined, (s) => expectBoolean(s.value, s.key)),
    log: overrides.log === true,
    log_request_body: read('log_request_body', setting('log_request_body').default!, (s) => {
      const on = expectBoolean(s.value, s.key);
      if (on && overrides.log !== true) {
        notices.push({ key: s.key, message: `${s.key}: request bodies are logged only with --log` });
      }
      return on;
    }),
    log_level: ruled('log_level'),
    max_request_body_bytes: ruled('max_request_body_bytes'),
    body_timeout_ms: ruled('body_timeout_ms'),
    max_json_body_bytes: ruled('max_json_body_bytes'),
    max_websocket_message_bytes: ruled('max_websocket_message_bytes'),
    max_inflight_body_bytes: ruled('max_inflight_body_bytes'),
    body_deadline_ms: ruled('body_deadline_ms'),
    max_connections: ruled('max_connections'),
    max_realtime_sessions: ruled('max_realtime_sessions'),
    max_client_secrets: ruled('max_client_secrets'),
    realtime_idle_timeout_ms: ruled('realtime_idle_timeout_ms'),
    realtime_max_session_ms: ruled('realtime_max_session_ms'),
    wyoming_idle_timeout_ms: ruled('wyoming_idle_timeout_ms'),
    bridge_idle_timeout_ms: ruled('bridge_idle_timeout_ms'),
    chunking_vad_model: ruled('chunking_vad_model'),
    diarization_text_model: ruled('diarization_text_model'),
    max_audio_seconds: ruled('max_audio_seconds'),
    max_input_chars: ruled('max_input_chars'),
    ffmpeg_path: ruled('ffmpeg_path'),
    ffmpeg_timeout_ms: ruled('ffmpeg_timeout_ms'),
    ffmpeg_decode_stall_ms: ruled('ffmpeg_decode_stall_ms'),
    default_speech_format: ruled('default_speech_format'),
    file_roots: [],
    max_download_bytes: ruled('max_download_bytes'),
    max_package_bytes: ruled('max_package_bytes'),
    installer_allow_private_hosts: ruled('installer_allow_private_hosts'),
    busy_timeout_ms: ruled('busy_timeout_ms'),
    max_queued_requests: ruled('max_queued_requests'),
    ready_when_saturated: ruled('ready_when_saturated'),
    max_loaded_models: ruled('max_loaded_models'),
    idle_unload_ms: ruled('idle_unload_ms'),
    shutdown_timeout_ms: ruled('shutdown_timeout_ms'),
    max_inference_ms: ruled('max_inference_ms'),
    min_free_memory_mb: ruled('min_free_memory_mb'),
    live_ingest: {
      ...LIVE_INGEST_DEFAULTS,
      ...read('live_ingest', {}, (s) => parseLiveIngest(s.value, s.key)),
    },
    frontend_listener: read('frontend_listener', setting('frontend_listener').default!, (s) =>
      parseFrontendListener(s.value, s.key),
    ),
    frontend_options: {},
    parallel_jobs: overrides.parallel_jobs === true,
    models: [],
    model_aliases: {},
    base_dir: baseDir,
    default_models_root: defaultModelsRoot(),
    models_root: '',
    api_keys: [],
    open_endpoints: [],
    insecure: false,
    enable_fixture: false,
  };

  if (overrides.log_file !== undefined) {
    config.log_file = path.resolve(cwd, expectString(overrides.log_file, '--log-file', { nonEmpty: true }));
  }
  const specOverride = read('model_spec_override', undefined, (s) => {
    const resolved = path.resolve(s.base, expectString(s.value, s.key, { nonEmpty: true }));
    notices.push({
      key: s.key,
      message: `${s.key}: voxd engines do not read model specs yet; the override is kept but has no effect`,
    });
    return resolved;
  });
  if (specOverride !== undefined) config.model_spec_override = specOverride;
  const wyomingPort = read(
    'wyoming_port',
    undefined,
    (s) => checkRule(setting('wyoming_port').rule!, s.value, s.key) as number,
  );
  if (wyomingPort !== undefined) config.wyoming_port = wyomingPort;
  const wyomingAsr = read(
    'wyoming_asr_model',
    undefined,
    (s) => checkRule(setting('wyoming_asr_model').rule!, s.value, s.key) as string,
  );
  if (wyomingAsr !== undefined) config.wyoming_asr_model = wyomingAsr;
  const zeroconf = read(
    'wyoming_zeroconf',
    undefined,
    (s) => checkRule(setting('wyoming_zeroconf').rule!, s.value, s.key) as string,
  );
  if (zeroconf !== undefined) {
    if (config.wyoming_port === undefined)
      throw ConfigError.rejected(
        'wyoming_zeroconf',
        zeroconf,
        'it announces the Wyoming listener; set wyoming_port too',
      );
    config.wyoming_zeroconf = zeroconf;
  }
  const voiceDir = read('voice_dir', undefined, parseVoiceDir);
  if (voiceDir !== undefined) config.voice_dir = voiceDir;
  config.models_root = read('models_root', config.default_models_root, (s) =>
    path.resolve(s.base, expectString(s.value, s.key, { nonEmpty: true })),
  );
  const cert = read('tls_cert_file', undefined, parsePemFile);
  const key = read('tls_key_file', undefined, parsePemFile);
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
  const frontendSources = {
    file:
      file['frontend_options'] === undefined ? {} : toOptionMap(file['frontend_options'], 'frontend_options'),
    cli: overrides.frontend_options ?? {},
  };
  config.frontend_options = checkFrontendOptions(config.frontend_listener, frontendSources, notices);
  if (config.frontend_listener === 'https')
    config.tls = httpsListenerTls(config.tls, frontendSources, baseDir);
  config.file_roots = read('file_roots', defaultFileRoots(configFile, config), parseFileRoots);
  const env = opts.env ?? process.env;
  config.api_keys = [
    ...keysFromConfig(file['api_keys']),
    ...read('api_keys_file', [], (s) =>
      keysFromFile(path.resolve(s.base, expectString(s.value, s.key, { nonEmpty: true })), s.key),
    ),
    ...keysFromEnv(env['VOXD_API_KEYS']),
  ];
  config.open_endpoints = parseOpenEndpoints(file['open_endpoints']);
  config.insecure = ruled('insecure');
  config.enable_fixture = overrides.enable_fixture === true || env['VOXD_ENABLE_FIXTURE'] === '1';

  // Without a config file voxd serves the embedded models (lazily); with one, exactly its models.
  const models = configFile === undefined ? [...EMBEDDED_MODELS] : file['models'];
  config.models = parseModels(models, config, opts.knownFamilies, notices);
  config.model_aliases = parseModelAliases(
    {
      file: file['model_aliases'],
      flags: overrides.model_aliases,
      modelIds: config.models.map((m) => m.id),
      modelsRoot: config.models_root,
    },
    notices,
  );
  return { config, notices };
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
