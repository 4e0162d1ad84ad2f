/**
 * One model entry (reference §3.2). The same parser serves the config file at startup and dynamic
 * registration (POST /v1/models/load), so a bad value must always surface as a ConfigError rather
 * than a crash later inside the runtime.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import {
  ConfigError,
  expectBoolean,
  expectInteger,
  expectOneOf,
  expectString,
  isPlainObject,
  keyPath,
} from './errors.js';
import { toOptionMap } from './options.js';
import {
  type ConfigNotice,
  ISOLATIONS,
  type LiveIngestConfig,
  MODES,
  type ModelConfig,
  TASK_TOKENS,
  type TaskToken,
  type VoicePreset,
} from './types.js';

export interface ModelContext {
  /** Key path of this entry in messages, e.g. `models[0]`. */
  key: string;
  /** Folder that relative paths resolve against. */
  baseDir: string;
  /** The server's `lazy_load`, inherited when `lazy` is absent. */
  lazyDefault: boolean;
  /** Whether the server started with `--parallel-jobs`; decides whether `slots` is allowed at all. */
  parallel: boolean;
  knownFamilies: readonly string[];
}

export const LIVE_INGEST_DEFAULTS: Readonly<LiveIngestConfig> = Object.freeze({
  idle_timeout_ms: 30_000,
  total_timeout_ms: 600_000,
  max_body_bytes: 536_870_912,
  max_chunk_bytes: 8_388_608,
  send_timeout_ms: 30_000,
});

const LIVE_INGEST_KEYS = Object.keys(LIVE_INGEST_DEFAULTS) as (keyof LiveIngestConfig)[];

/**
 * Validates a (possibly partial) live_ingest block. Unknown sub-keys are errors, not notices: a typo
 * here would silently leave a limit at its default, and these limits guard memory.
 */
export function parseLiveIngest(raw: unknown, key: string): Partial<LiveIngestConfig> {
  if (!isPlainObject(raw)) {
    throw ConfigError.invalid(key, raw, `an object with any of: ${LIVE_INGEST_KEYS.join(', ')}`);
  }
  const out: Partial<LiveIngestConfig> = {};
  for (const [name, value] of Object.entries(raw)) {
    const at = keyPath(key, name);
    if (!(LIVE_INGEST_KEYS as string[]).includes(name)) {
      throw ConfigError.rejected(
        at,
        name,
        `unknown live_ingest key; expected one of: ${LIVE_INGEST_KEYS.join(', ')}`,
      );
    }
    // 0 disables a limit, except for the chunk size, which bounds every single read.
    const min = name === 'max_chunk_bytes' ? 1 : 0;
    out[name as keyof LiveIngestConfig] = expectInteger(value, at, { min });
  }
  return out;
}

const MODEL_KEYS = new Set([
  'id',
  'family',
  'path',
  'task',
  'mode',
  'lazy',
  'busy_timeout_ms',
  'max_queued_requests',
  'max_inference_ms',
  'max_audio_seconds',
  'max_input_chars',
  'live_ingest',
  'config',
  'weight',
  'model_spec_override',
  'load_options',
  'session_options',
  'default_request_options',
  'voice_presets',
  'default_voice_preset',
  'voice_aliases',
  'slots',
  'isolation',
  'package',
]);

/** Keys seen in one audio.cpp branch only, with semantics we could not confirm (reference §3.1, §3.2). */
const UNCONFIRMED_KEYS = new Set(['instance_count', 'apikeys']);

export function keyNotice(key: string, name: string): ConfigNotice {
  return UNCONFIRMED_KEYS.has(name)
    ? { key, message: `${key}: unconfirmed audio.cpp key; voxd ignores it` }
    : { key, message: `${key}: unknown key ignored` };
}

/**
 * Model ids: what package ids may be (src/models/catalog.ts's PACKAGE_ID, since an installed
 * package is used under its id), at most 128 characters of letters, digits, `_`, `-` and `.`, never
 * a leading `.`. An id is echoed in every status, log line and `/metrics` label: a 1 MB id was
 * accepted once and grew `/metrics` to 5 MB.
 */
export const MODEL_ID = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;
export const MAX_MODEL_ID_CHARS = 128;

/** `id` when it is a valid model id; a ConfigError naming `key` and the (cut) value otherwise. */
export function checkModelId(id: string, key: string): string {
  if (MODEL_ID.test(id)) return id;
  throw ConfigError.rejected(
    key,
    id,
    id.length > MAX_MODEL_ID_CHARS
      ? `a model id is at most ${MAX_MODEL_ID_CHARS} characters; this one has ${id.length}`
      : "a model id holds letters, digits, '_', '-' and '.' only, and does not start with '.'",
  );
}

export function parseModelConfig(
  raw: unknown,
  ctx: ModelContext,
): { model: ModelConfig; notices: ConfigNotice[] } {
  if (!isPlainObject(raw)) throw ConfigError.invalid(ctx.key, raw, 'a model object with id, family and path');
  const notices: ConfigNotice[] = [];
  const at = (name: string) => keyPath(ctx.key, name);
  for (const name of Object.keys(raw)) {
    if (!MODEL_KEYS.has(name)) notices.push(keyNotice(at(name), name));
  }

  const required = (name: string): string => {
    if (raw[name] === undefined) throw ConfigError.missing(at(name), 'a non-empty string (required)');
    return expectString(raw[name], at(name), { nonEmpty: true });
  };
  const optional = <T>(name: string, parse: (value: unknown, key: string) => T): T | undefined =>
    raw[name] === undefined ? undefined : parse(raw[name], at(name));

  const id = checkModelId(required('id'), at('id'));
  const packageId = optional('package', (v, k) => expectString(v, k, { nonEmpty: true }));
  if (packageId !== undefined && raw['path'] !== undefined)
    throw ConfigError.rejected(
      at('package'),
      packageId,
      'a model loads from its package or from a path; give one',
    );
  // With a package, the family may come from it (filled in by the runtime, which knows the root).
  const family =
    packageId !== undefined && raw['family'] === undefined
      ? ''
      : parseFamily(required('family'), at('family'), ctx.knownFamilies);
  // Optional: engines that ship their model with voxd (flite, espeak) need none; '' means "not given".
  const modelPath =
    raw['path'] === undefined
      ? ''
      : path.resolve(ctx.baseDir, expectString(raw['path'], at('path'), { nonEmpty: true }));
  const model: ModelConfig = {
    id,
    family,
    path: modelPath,
    task:
      optional('task', (v, k) => expectOneOf(v, k, TASK_TOKENS)) ?? (packageId ? ('' as TaskToken) : 'tts'),
    mode: optional('mode', (v, k) => expectOneOf(v, k, MODES)) ?? 'offline',
    lazy: optional('lazy', expectBoolean) ?? ctx.lazyDefault,
    load_options: optional('load_options', toOptionMap) ?? {},
    session_options: optional('session_options', toOptionMap) ?? {},
    default_request_options: optional('default_request_options', toOptionMap) ?? {},
    voice_presets: {},
  };

  const busyTimeout = optional('busy_timeout_ms', (v, k) => expectInteger(v, k, { min: 0 }));
  if (busyTimeout !== undefined) model.busy_timeout_ms = busyTimeout;
  const maxQueued = optional('max_queued_requests', (v, k) => expectInteger(v, k, { min: 0 }));
  if (maxQueued !== undefined) model.max_queued_requests = maxQueued;
  const maxInference = optional('max_inference_ms', (v, k) => expectInteger(v, k, { min: 0 }));
  if (maxInference !== undefined) model.max_inference_ms = maxInference;
  const maxAudio = optional('max_audio_seconds', (v, k) => expectInteger(v, k, { min: 0 }));
  if (maxAudio !== undefined) model.max_audio_seconds = maxAudio;
  const maxChars = optional('max_input_chars', (v, k) => expectInteger(v, k, { min: 0 }));
  if (maxChars !== undefined) model.max_input_chars = maxChars;
  const liveIngest = optional('live_ingest', parseLiveIngest);
  if (liveIngest !== undefined) model.live_ingest = liveIngest;
  const configId = optional('config', (v, k) => expectString(v, k));
  if (configId !== undefined) model.config = configId;
  const weightId = optional('weight', (v, k) => expectString(v, k));
  if (weightId !== undefined) model.weight = weightId;
  const specOverride = optional('model_spec_override', (v, k) => expectString(v, k, { nonEmpty: true }));
  if (specOverride !== undefined) {
    model.model_spec_override = path.resolve(ctx.baseDir, specOverride);
    notices.push({
      key: at('model_spec_override'),
      message: `${at('model_spec_override')}: voxd engines do not read model specs yet; the override is kept but has no effect`,
    });
  }

  if (raw['voice_presets'] !== undefined) {
    model.voice_presets = parseVoicePresets(raw['voice_presets'], at('voice_presets'), ctx.baseDir, notices);
  }
  if (raw['default_voice_preset'] !== undefined) {
    model.default_voice_preset = parseDefaultPreset(
      raw['default_voice_preset'],
      at('default_voice_preset'),
      model,
      ctx,
      notices,
    );
  }

  const aliases = optional('voice_aliases', parseVoiceAliases);
  if (aliases !== undefined) model.voice_aliases = aliases;

  const slots = parseSlots(raw, at('slots'), ctx.parallel);
  if (slots !== undefined) model.slots = slots;
  // Whether the family can share one engine between slots is the runtime's check (it knows families).
  const isolation = optional('isolation', (v, k) => expectOneOf(v, k, ISOLATIONS));
  if (isolation !== undefined) model.isolation = isolation;
  if (packageId !== undefined) model.package = packageId;
  return { model, notices };
}

/**
 * A registered model as the body of `POST /v1/models/load` that registers it again unchanged (the
 * UI's editor starts from it). Paths stay absolute; a package model names its package, not the
 * folder it came from, and an engine that ships its model names no path.
 */
/** The option maps of a model entry: flat string maps (options.ts), every one optional. */
export const MODEL_OPTION_MAPS = ['load_options', 'session_options', 'default_request_options'] as const;

/**
 * The entry an installed package registers as when a request names it: its family, path and task,
 * lazy, and nothing else set.
 */
export function packageModelConfig(
  id: string,
  installed: { family: string; path: string; task: TaskToken },
): ModelConfig {
  return {
    id,
    ...installed,
    mode: 'offline',
    lazy: true,
    load_options: {},
    session_options: {},
    default_request_options: {},
    voice_presets: {},
  };
}

export function registrationBody(model: ModelConfig): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(model)) if (value !== undefined) body[key] = value;
  if (model.path === '' || model.package !== undefined) delete body['path'];
  return body;
}

/** The controlled test engine, served only on request (src/app.ts checkStartup). */
export const FIXTURE_FAMILY = 'fixture';
export const FIXTURE_OFF =
  '"fixture" is the test engine and is off; start voxd with --enable-fixture (or VOXD_ENABLE_FIXTURE=1) to serve it';

function parseFamily(family: string, key: string, known: readonly string[]): string {
  if (family === FIXTURE_FAMILY && !known.includes(family))
    throw new ConfigError(key, family, `${key}: ${FIXTURE_OFF}`);
  if (!known.includes(family)) {
    const list = known.length > 0 ? known.join(', ') : '(no engine families are registered)';
    throw ConfigError.invalid(key, family, `a known engine family: ${list}`);
  }
  return family;
}

/**
 * The legacy runtime rejects any explicit `slots`, even 1 or null, so a config written for the
 * parallel runtime never silently runs serialized (reference §5, runtime selection table).
 */
function parseSlots(raw: Record<string, unknown>, key: string, parallel: boolean): number | undefined {
  if (!Object.hasOwn(raw, 'slots')) return undefined;
  const value = raw['slots'];
  if (!parallel) throw ConfigError.rejected(key, value, 'slots requires --parallel-jobs at server startup');
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 16) {
    throw ConfigError.rejected(key, value, 'model slots must be an integer between 1 and 16');
  }
  return value;
}

/** `{alias: engine voice id}`; both sides non-empty strings, checked here so a typo fails at startup. */
function parseVoiceAliases(raw: unknown, key: string): Record<string, string> {
  if (!isPlainObject(raw)) throw ConfigError.invalid(key, raw, 'an object of {alias: engine voice id}');
  const entries: [string, string][] = [];
  for (const [name, value] of Object.entries(raw)) {
    if (name.length === 0) throw ConfigError.invalid(keyPath(key, name), name, 'a non-empty alias name');
    entries.push([name, expectString(value, keyPath(key, name), { nonEmpty: true })]);
  }
  // fromEntries keeps an alias named "__proto__" an ordinary entry.
  return Object.fromEntries(entries);
}

const PRESET_FIELDS = ['voice_id', 'voice_ref', 'reference_text'] as const;

function parseVoicePresets(
  raw: unknown,
  key: string,
  baseDir: string,
  notices: ConfigNotice[],
): Record<string, VoicePreset> {
  if (!isPlainObject(raw)) throw ConfigError.invalid(key, raw, 'an object of {name: preset}');
  const entries: [string, VoicePreset][] = [];
  for (const [name, value] of Object.entries(raw)) {
    if (name.length === 0) throw ConfigError.invalid(keyPath(key, name), name, 'a non-empty preset name');
    entries.push([name, parseVoicePreset(value, keyPath(key, name), baseDir, notices)]);
  }
  // fromEntries keeps a preset named "__proto__" an ordinary entry.
  return Object.fromEntries(entries);
}

function parseVoicePreset(raw: unknown, key: string, baseDir: string, notices: ConfigNotice[]): VoicePreset {
  if (!isPlainObject(raw))
    throw ConfigError.invalid(key, raw, `a preset object with ${PRESET_FIELDS.join(', ')}`);
  for (const name of Object.keys(raw)) {
    if (!(PRESET_FIELDS as readonly string[]).includes(name))
      notices.push(keyNotice(keyPath(key, name), name));
  }
  const preset: VoicePreset = {};
  if (raw['voice_id'] !== undefined) {
    preset.voice_id = expectString(raw['voice_id'], keyPath(key, 'voice_id'), { nonEmpty: true });
  }
  if (raw['voice_ref'] !== undefined) {
    const refKey = keyPath(key, 'voice_ref');
    const ref = expectString(raw['voice_ref'], refKey, { nonEmpty: true });
    preset.voice_ref = path.resolve(baseDir, ref);
    // audio.cpp reads the WAV at registration; failing here keeps a typo from surfacing mid-request.
    const stat = statSync(preset.voice_ref, { throwIfNoEntry: false });
    if (!stat?.isFile()) throw ConfigError.rejected(refKey, ref, `no such file: ${preset.voice_ref}`);
  }
  if (raw['reference_text'] !== undefined) {
    preset.reference_text = expectString(raw['reference_text'], keyPath(key, 'reference_text'));
  }
  if (Object.keys(preset).length === 0) {
    throw ConfigError.invalid(key, raw, `at least one of ${PRESET_FIELDS.join(', ')}`);
  }
  return preset;
}

function parseDefaultPreset(
  raw: unknown,
  key: string,
  model: ModelConfig,
  ctx: ModelContext,
  notices: ConfigNotice[],
): string | VoicePreset {
  if (typeof raw === 'string') {
    if (!Object.hasOwn(model.voice_presets, raw)) {
      const names = Object.keys(model.voice_presets);
      const list = names.length > 0 ? names.map((n) => JSON.stringify(n)).join(', ') : '(none defined)';
      throw ConfigError.invalid(key, raw, `the name of a preset in voice_presets: ${list}`);
    }
    return raw;
  }
  if (isPlainObject(raw)) return parseVoicePreset(raw, key, ctx.baseDir, notices);
  throw ConfigError.invalid(key, raw, 'a preset name or an inline preset object');
}
