/**
 * The server settings, each listed once: its server.json key, its `voxd serve` flag, its default,
 * the rule the config loader checks it by, its --help lines and its docs/configuration.md rows. The
 * flag parser (src/cli/args.ts), the --help text, the config loader (server-config.ts), the
 * generated tables of the docs (settings-docs.ts) and the types ServerConfig (types.ts) and
 * CliOverrides (server-config.ts) are all read off this table, so a setting cannot be added to one
 * of them and forgotten in another.
 */
import { isIP } from 'node:net';
import { LOG_LEVELS } from '../observability/log-levels.js';
import type { ApiKey } from './api-keys.js';
import { ConfigError, expectBoolean, expectInteger, expectOneOf, expectString } from './errors.js';
import type { FrontendListener } from './frontend-listeners.js';
import type { Backend, LiveIngestConfig, ModelConfig, OptionMap } from './model-types.js';

/** How a flag's text becomes a value: the parser checks the syntax, the loader the range. */
export type FlagValue =
  /** A decimal integer ("12x", "1.5", "0x10" are refused). */
  | 'integer'
  /** Any text, checked by the loader. */
  | 'text'
  /** A non-empty path, checked by the parser itself (the loader never sees --config). */
  | 'path'
  /** No value; sets true (its negation, if any, false). */
  | 'switch'
  /** key=value, repeatable, collected into a map. */
  | 'pair';

/** What the parser makes of each kind of flag: the value of its CliOverrides field. */
interface FlagValues {
  integer: number;
  text: string;
  path: string;
  switch: boolean;
  pair: Record<string, string>;
}

/** Types only: the value a setting has in ServerConfig, carried by its rule. Never set. */
declare const VALUE: unique symbol;
/** Types only: what the types read off a table entry (see Entry). Never set. */
declare const SHAPE: unique symbol;

interface Typed<T> {
  readonly [VALUE]?: T;
}

/**
 * What the loader accepts for a setting. `bespoke` settings (nested objects, paths read at startup,
 * values with notices) are checked by their own code in server-config.ts; the others by checkRule.
 */
export type Rule =
  | { kind: 'count' }
  | { kind: 'integer'; min: number; max?: number; expected?: string }
  | { kind: 'boolean' }
  | { kind: 'oneOf'; values: readonly string[]; expected?: string }
  | { kind: 'string'; nonEmpty?: boolean }
  | { kind: 'ip' }
  | { kind: 'hosts' }
  | { kind: 'bespoke' };

/** The ServerConfig value of a setting with this rule. */
export type RuleValue<R> = R extends Typed<infer T> ? T : never;

type RuleOf<K extends Rule['kind']> = Extract<Rule, { kind: K }>;

// The rules, each typed with the value it lets through; the table builds its rules with these.
const count = (): RuleOf<'count'> & Typed<number> => ({ kind: 'count' });
const integer = (min: number, max?: number, expected?: string): RuleOf<'integer'> & Typed<number> => ({
  kind: 'integer',
  min,
  max,
  expected,
});
const boolean = (): RuleOf<'boolean'> & Typed<boolean> => ({ kind: 'boolean' });
const oneOf = <const V extends readonly string[]>(
  values: V,
  expected?: string,
): RuleOf<'oneOf'> & { values: V } & Typed<V[number]> => ({ kind: 'oneOf', values, expected });
const string = (nonEmpty: boolean): RuleOf<'string'> & Typed<string> => ({ kind: 'string', nonEmpty });
const ip = (): RuleOf<'ip'> & Typed<string> => ({ kind: 'ip' });
/** Host names: an array in server.json, comma-separated text on the command line. */
const hosts = (): RuleOf<'hosts'> & Typed<readonly string[]> => ({ kind: 'hosts' });
/** A rule of the setting's own code, which makes a T of what it is given. */
const bespoke = <T>(): RuleOf<'bespoke'> & Typed<T> => ({ kind: 'bespoke' });

export interface Flag {
  name: string;
  value: FlagValue;
  /** The argument as --help shows it (`<ms>`); none for a switch. */
  arg?: string;
  /** Where a flag that is no setting puts its value; settings' flags set the override named by key. */
  to?: 'configPath' | 'help' | 'version';
  /** Other spellings (`-h`). */
  aliases?: readonly string[];
  /** A switch that turns the setting off (`--no-ui`). */
  negation?: { name: string; help: readonly string[] };
  /**
   * --help's description, one string per line of the help text. The help adds the setting's
   * default to it (`(default 8080)`), so it never says the default itself.
   */
  help: readonly string[];
  /** The default as --help words it, for a setting whose default the table cannot hold (it is computed). */
  helpDefault?: string;
  /** The Notes cell of the docs flag table. */
  note?: string;
}

/** One row of docs/configuration.md's key table; the default is the setting's unless given here. */
export interface KeyDoc {
  type: string;
  default?: string;
  allowed: string;
  meaning: string;
}

/**
 * How a setting is in ServerConfig: under its key (`optional`: only when it is set), or not at all
 * (`none`: another field is made of it, as `tls` of tls_cert_file and tls_key_file).
 */
export type Presence = 'required' | 'optional' | 'none';

export interface Setting {
  /** The server.json key, or for a flag-only setting the CliOverrides field; none for --config and the like. */
  key?: string;
  /** Whether server.json has the key (flag-only settings such as `log` are unknown keys there). */
  file: boolean;
  flag?: Flag;
  default?: unknown;
  rule?: Rule;
  doc?: KeyDoc;
  /** How a keyed setting is in ServerConfig. */
  config?: Presence;
}

/**
 * A keyed table entry as the types see it: `value` its ServerConfig field's type, `presence` how
 * the field is there, `cli` its CliOverrides field's type (never: it has no flag).
 */
export interface Entry<K extends string, V, P extends Presence, C> extends Setting {
  key: K;
  default?: V;
  readonly [SHAPE]?: { value: V; presence: P; cli: C };
}

interface EntryShape {
  value: unknown;
  presence: Presence;
  cli: unknown;
}
type ShapeOf<E> = E extends { key: string; readonly [SHAPE]?: infer S extends EntryShape } ? S : never;
type KeyOf<E> = E extends { key: infer K extends string } ? K : never;
type Simplify<T> = { [K in keyof T]: T[K] } & {};

/** The ServerConfig fields of the entries in union E that are there as P says. */
type Fields<E, P extends Presence> = {
  [S in E as ShapeOf<S> extends { presence: P } ? KeyOf<S> : never]: ShapeOf<S>['value'];
};

/** The ServerConfig fields of a union of entries: one per key, optional where the entry says so. */
export type ConfigOf<E> = Simplify<Fields<E, 'required'> & Partial<Fields<E, 'optional'>>>;

/** The CliOverrides fields of a union of entries: one per setting a flag sets, each optional. */
export type OverridesOf<E> = Simplify<{
  [S in E as [ShapeOf<S>['cli']] extends [never] ? never : KeyOf<S>]?: ShapeOf<S>['cli'];
}>;

export interface SettingGroup {
  /** The --help heading of the group's flags; empty for the closing --version and --help. */
  heading: string;
  settings: readonly Setting[];
}

/** A setting's flag as the table writes it: the name is `--` and the key in kebab case unless given. */
type FlagSpec<F extends FlagValue> = Omit<Flag, 'name' | 'value'> & { name?: string; value: F };

/** A setting's key-table row as the table writes it: the type follows from the rule unless given. */
type DocSpec = Omit<KeyDoc, 'type'> & { type?: string };

interface SettingSpec<R extends Rule, F extends FlagValue, P extends Presence> {
  /** Whether server.json has the key. @default true */
  file?: boolean;
  flag?: FlagSpec<F>;
  default?: RuleValue<R>;
  doc?: DocSpec;
  config?: P;
}

const DOC_TYPES: Partial<Record<Rule['kind'], string>> = {
  count: 'integer',
  integer: 'integer',
  boolean: 'boolean',
  oneOf: 'string',
  string: 'string',
  ip: 'string',
};

/** One keyed setting; its rule gives the type of its default and of its ServerConfig field. */
function define<
  const K extends string,
  R extends Rule,
  F extends FlagValue = never,
  P extends Presence = 'required',
>(key: K, rule: R, spec: SettingSpec<R, F, P>): Entry<K, RuleValue<R>, P, FlagValues[F]> {
  const { flag, doc, file = true, config = 'required', ...rest } = spec;
  const out: Setting = { key, file, ...rest, rule, config };
  if (flag !== undefined) out.flag = { ...flag, name: flag.name ?? `--${key.replaceAll('_', '-')}` };
  if (doc !== undefined) {
    const type = doc.type ?? DOC_TYPES[rule.kind];
    if (type === undefined) throw new Error(`setting ${key}: a bespoke rule's docs row needs its type`);
    out.doc = { ...doc, type };
  }
  return out as Entry<K, RuleValue<R>, P, FlagValues[F]>;
}

/** What a count's docs row and flag add: what `0` means, the docs' meaning, the flag table's note. */
interface CountSpec {
  zero?: string;
  meaning: string;
  note?: string;
}

/** The argument --help shows for a count, after its key's unit. */
function countArg(key: string): string {
  if (key.endsWith('_ms')) return '<ms>';
  if (key.endsWith('_mb')) return '<mb>';
  if (key.endsWith('_seconds')) return '<s>';
  return '<n>';
}

/** A count (an integer >= 0) that server.json and a flag both set: most of the limits. */
function countSetting<const K extends string>(
  key: K,
  fallback: number,
  help: readonly string[],
  spec: CountSpec,
) {
  const { zero, meaning, note } = spec;
  return define(key, count(), {
    flag: { value: 'integer', arg: countArg(key), help, ...(note === undefined ? {} : { note }) },
    default: fallback,
    doc: { allowed: zero === undefined ? '>= 0' : `>= 0, \`0\` = ${zero}`, meaning },
  });
}

/** A boolean that server.json and a switch both set. */
function switchSetting<const K extends string>(
  key: K,
  fallback: boolean,
  help: readonly string[],
  spec: { meaning: string } & Pick<Flag, 'note' | 'negation'>,
) {
  const { meaning, ...flag } = spec;
  return define(key, boolean(), {
    flag: { value: 'switch', help, ...flag },
    default: fallback,
    doc: { allowed: '', meaning },
  });
}

/** A flag of `voxd serve` that is no setting (--config, --version, --help). */
const command = (flag: Flag): { file: false; flag: Flag } => ({ file: false, flag });

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;

/**
 * A byte count's default as people read it (`256 MiB`, `16 GiB`), which --help and the docs show
 * beside the number; undefined for other settings and for sizes that are no whole MiB.
 */
export function defaultSize(setting: Setting): string | undefined {
  const bytes = setting.default;
  if (!setting.key?.endsWith('_bytes') || typeof bytes !== 'number') return undefined;
  if (bytes >= GiB && bytes % GiB === 0) return `${bytes / GiB} GiB`;
  if (bytes >= MiB && bytes % MiB === 0) return `${bytes / MiB} MiB`;
  return undefined;
}

/**
 * Fits hours of compressed audio or about two hours of 16 kHz WAV; multipart uploads past a
 * megabyte are spooled to disk, so this bounds disk use more than memory.
 */
const DEFAULT_MAX_BODY_BYTES = 256 * MiB;

/**
 * A JSON body is held whole and parsed: 32 MiB is about 13 minutes of 16 kHz mono 16-bit WAV as
 * base64, and at 2-3 times its size while parsed, twenty such bodies at once stay in a few GB.
 */
const DEFAULT_MAX_JSON_BODY_BYTES = 32 * MiB;

/** Sixteen default-sized JSON bodies at once: about 1.5 GB at their peak, which a 2-core 24 GiB machine survives. */
const DEFAULT_MAX_INFLIGHT_BODY_BYTES = 512 * MiB;

export const SPEECH_FORMATS = ['wav', 'pcm', 'mp3', 'opus', 'aac', 'flac'] as const;

/** In --help order; the docs tables follow the same order. Typed entry by entry: types.ts reads them. */
const GROUPS = [
  {
    heading: 'Config:',
    settings: [
      command({
        name: '--config',
        value: 'path',
        to: 'configPath',
        arg: '<file>',
        help: [
          'server.json; without it voxd serves its embedded models',
          '(relative paths inside it resolve against its folder)',
        ],
        note: 'Optional: without it voxd serves the embedded models. Resolved against the cwd.',
      }),
    ],
  },
  {
    heading: 'Bind:',
    settings: [
      define('host', ip(), {
        flag: { value: 'text', arg: '<ip>', help: ['address to listen on'] },
        default: '127.0.0.1',
        doc: {
          allowed: 'an IPv4 or IPv6 address literal',
          meaning: 'Address to listen on. Host names are refused.',
        },
      }),
      define('port', integer(0, 65535, 'an integer in 0..65535 (0 picks a free port)'), {
        flag: { value: 'integer', arg: '<n>', help: ['port, 0 picks a free one'] },
        default: 8080,
        doc: { allowed: '0..65535', meaning: 'Port; `0` picks a free port (the chosen one is printed).' },
      }),
      define('wyoming_port', integer(0, 65535, 'an integer in 0..65535 (0 picks a free port)'), {
        config: 'optional',
        flag: { value: 'integer', arg: '<n>', help: ['serve Wyoming (Home Assistant) on this port'] },
        doc: {
          default: 'off',
          allowed: '0..65535',
          meaning:
            "Turns on the Wyoming listener ([wyoming.md](wyoming.md)): Home Assistant's speech protocol over TCP, serving every ASR and speech model. 10300 and 10200 are the community's ports; `0` picks a free one (printed). Off when unset.",
        },
      }),
      define('wyoming_asr_model', string(true), {
        config: 'optional',
        flag: {
          value: 'text',
          arg: '<id>',
          help: ['the ASR model a Wyoming transcription without a name uses'],
        },
        doc: {
          default: 'the first ASR model',
          allowed: 'a model id or alias',
          meaning:
            'The model that transcribes a Wyoming exchange whose `transcribe` names none (Home Assistant names the model the user chose in its settings; other clients may not). Unset: the first ASR model registered.',
        },
      }),
      define('wyoming_zeroconf', string(true), {
        config: 'optional',
        flag: {
          value: 'text',
          arg: '<name>',
          help: ['announce the Wyoming listener over mDNS under this name'],
        },
        doc: {
          default: 'off',
          allowed: 'a service name',
          meaning:
            'Announces the Wyoming listener as `<name>._wyoming._tcp.local.` over mDNS, which Home Assistant discovers ([wyoming.md](wyoming.md)); withdrawn at shutdown. Needs `wyoming_port`. A listener on loopback is announced all the same (the log says it cannot be reached from elsewhere).',
        },
      }),
      define('deepgram_listen_model', string(true), {
        config: 'optional',
        flag: {
          value: 'text',
          arg: '<id>',
          help: ['the ASR model Deepgram model names (nova-3, ...) on /v1/listen map to'],
        },
        doc: {
          default: 'the first ASR model',
          allowed: 'a model id or alias',
          meaning:
            'The model that transcribes a `/v1/listen` request ([deepgram.md](deepgram.md)) whose `model` is a Deepgram model name (`nova-3`, `nova-2-general`, `base`, ...) or absent, so a client written for Deepgram works unchanged. A voxd model id or alias in `model` is used as it is. Unset: the first ASR model registered.',
        },
      }),
      define('deepgram_speak_model', string(true), {
        config: 'optional',
        flag: {
          value: 'text',
          arg: '<id>',
          help: ['the speech model Deepgram model names (aura-2-thalia-en, ...) on /v1/speak map to'],
        },
        doc: {
          default: 'the first speech model',
          allowed: 'a model id or alias',
          meaning:
            'The model that speaks a `/v1/speak` request ([deepgram.md](deepgram.md)) whose `model` is a Deepgram voice name (`aura-2-thalia-en`, `aura-asteria-en`, ...) or absent. A voxd model id or alias in `model` is used as it is, with its default voice. Unset: the first model registered with task `tts`.',
        },
      }),
      define('deepgram_speak_voice', string(true), {
        config: 'optional',
        flag: {
          value: 'text',
          arg: '<voice>',
          help: ['the voice Deepgram model names on /v1/speak speak with'],
        },
        doc: {
          default: "the model's default voice",
          allowed: 'a voice of `deepgram_speak_model`',
          meaning:
            "The voice a Deepgram voice name in `/v1/speak`'s `model` stands for ([deepgram.md](deepgram.md)): every `aura-*` name speaks with it. Unset: the model's default voice.",
        },
      }),
      define('wyoming_host', ip(), {
        flag: { value: 'text', arg: '<ip>', help: ['address of the Wyoming listener'] },
        default: '127.0.0.1',
        doc: {
          allowed: 'an IPv4 or IPv6 address literal',
          meaning:
            'Address of the Wyoming listener. Wyoming has no authentication: an address other than loopback needs `--insecure`, whatever `api_keys` says.',
        },
      }),
    ],
  },
  {
    heading: 'UI and management:',
    settings: [
      switchSetting('ui', true, ['serve the web UI'], {
        negation: { name: '--no-ui', help: ['do not serve the web UI'] },
        meaning:
          'Serves the web UI (`GET /`, `/ui/*`) and its status stream (`GET /v1/ui/status/stream`); false (`--no-ui`): those answer 404. While true, `OPTIONS` preflights are answered. See [api.md](api.md#web-ui).',
      }),
      switchSetting('ui_management', false, ['enable model management routes'], {
        note: 'Can only turn management on.',
        meaning:
          'Enables `POST /v1/models/load` and `POST /v1/models/unload`; also allows an absent or empty `models`.',
      }),
      define('cors_origins', oneOf(['', '*'], '"" (off) or "*"'), {
        flag: { value: 'text', arg: '<"" | "*">', help: ['CORS: "" off or "*" any origin'] },
        default: '',
        doc: {
          allowed: '`""` or `"*"`',
          meaning: '`"*"` echoes the request\'s `Origin` on every response (see api.md, CORS).',
        },
      }),
      define('allowed_hosts', hosts(), {
        flag: {
          value: 'text',
          arg: '<name,...>',
          help: ['more host names a keyless server answers to, "*" any'],
          note: 'Comma-separated.',
        },
        default: [],
        doc: {
          type: 'array of strings',
          default: '`[]`',
          allowed: 'host names (`voxd.example.com`; `.example.com` also takes its subdomains), or `["*"]`',
          meaning:
            'Without API keys voxd answers only requests whose `Host` is an IP address, a name without a dot (`localhost`, a container\'s), or a `.localhost`, `.local`, `.internal` or `.home.arpa` name, so that no page can reach it through a DNS name of its own (DNS rebinding); these names are added, and a page they serve may also call voxd. `["*"]` turns the `Host` check off. See [Browsers and a keyless server](#browsers-and-a-keyless-server).',
        },
      }),
    ],
  },
  {
    heading: 'Backend (accepted for audio.cpp compatibility; voxd engines run on the CPU):',
    settings: [
      define('backend', bespoke<Backend>(), {
        flag: { value: 'text', arg: '<name>', help: ['cpu|cuda|hip|rocm|vulkan|metal'] },
        default: 'cpu',
        doc: {
          type: 'string',
          allowed: '`cpu`, `cuda`, `hip`, `rocm` (= `hip`), `vulkan`, `metal`; `best` is refused',
          meaning:
            'voxd engines run on the CPU. Any other value is accepted, ignored, and logged as a notice.',
        },
      }),
      countSetting('device', 0, ['device index'], {
        meaning: 'Passed to engines; a non-zero value is logged as ignored.',
      }),
      define('threads', integer(1), {
        flag: { value: 'integer', arg: '<n>', help: ['compute threads per session, > 0'] },
        default: 1,
        doc: {
          allowed: '>= 1',
          meaning:
            "Compute threads per session (audio.cpp's key). Checked and passed in each engine's load spec, but voxd's engines use one compute thread per session today (sherpa-onnx `num_threads` 1): run more slots for more parallelism.",
        },
      }),
    ],
  },
  {
    heading: 'Timeouts and residency:',
    settings: [
      countSetting('busy_timeout_ms', 300_000, ['max wait for a busy model, 0 = unbounded'], {
        zero: 'wait without limit',
        meaning:
          'Server-wide ceiling on how long a request waits for a busy model. See [Busy timeout](#busy-timeout).',
      }),
      // Unbounded, as audio.cpp: busy_timeout_ms already limits each wait (docs/configuration.md).
      countSetting('max_queued_requests', 0, ['requests that may wait per model, 0 = unbounded'], {
        zero: 'unbounded',
        meaning:
          "How many requests may wait for each model's slots; one more is refused at once with 503 `queue_full`. See [Queue bound](#queue-bound).",
      }),
      switchSetting(
        'ready_when_saturated',
        false,
        ["/ready answers 503 while every loaded model's queue is full"],
        {
          note: 'Can only turn it on.',
          meaning:
            "`/ready` answers 503 while every loaded model's queue is full. See [Queue bound](#queue-bound).",
        },
      ),
      countSetting('max_loaded_models', 0, ['LRU limit on resident models, 0 = no limit'], {
        zero: 'no limit',
        meaning: 'Most models resident at once. See [Residency](#residency).',
      }),
      countSetting('idle_unload_ms', 0, ['unload idle models after this long, 0 = off'], {
        zero: 'off',
        meaning: 'Unload a model idle this long.',
      }),
      countSetting(
        'shutdown_timeout_ms',
        30_000,
        [
          'on SIGTERM/SIGINT, how long running requests may finish before they',
          'are cancelled, 0 = no limit',
        ],
        {
          zero: 'no limit',
          meaning:
            'On SIGTERM/SIGINT, how long running requests may finish before they are cancelled (see Shutdown below).',
        },
      ),
      countSetting('max_inference_ms', 0, ['cancel (504) a request running longer, 0 = off'], {
        zero: 'off',
        meaning:
          "The inference watchdog: a request running longer is cancelled for real (its worker thread terminated, its runner process killed; the session is replaced on the next request) and answered 504 `timeout_error`. The time counts from when the model is ready: a cold load the request waits for first (after an eviction, an idle retirement, a reconfiguration) is not counted; starting a session's runner process is. A model's own `max_inference_ms` wins.",
      }),
      countSetting('min_free_memory_mb', 0, ['refuse loads below this free memory, 0 = off'], {
        zero: 'off',
        meaning: 'Refuse a load that would leave less free memory than this.',
      }),
      define('parallel_jobs', bespoke<boolean>(), {
        file: false,
        flag: {
          value: 'switch',
          help: ['experimental parallel runtime; enables per-model slots'],
          note: 'Flag only. Selects the parallel runtime and allows `slots`. Logged at startup.',
        },
        default: false,
      }),
    ],
  },
  {
    heading: 'Request limits:',
    settings: [
      countSetting('max_request_body_bytes', DEFAULT_MAX_BODY_BYTES, ['largest request body'], {
        meaning:
          "Largest request body (multipart, and JSON up to `max_json_body_bytes`), and largest server-local file a request may name. Larger get 413. Multipart file parts past 1 MiB are spooled to a temporary file rather than held in memory (audio.cpp's default is 2 GiB, all buffered).",
      }),
      countSetting(
        'body_timeout_ms',
        30_000,
        [
          'answer 408 when a body sends nothing for this long, 0 = off;',
          'live routes keep their live_ingest limits',
        ],
        {
          zero: 'no limit',
          meaning:
            'A JSON or multipart request body that sends nothing for this long (the timer starts over with every chunk) is answered 408 `timeout_error` and its connection closed, so a client that stops half-way through a body cannot hold a connection and its handler forever. The live routes are bounded by `live_ingest` instead.',
        },
      ),
      countSetting('max_json_body_bytes', DEFAULT_MAX_JSON_BODY_BYTES, ['largest JSON request body'], {
        meaning:
          'Largest JSON request body; larger gets 413 (a declared Content-Length before any byte is read). Lower than `max_request_body_bytes` because a JSON body is held whole and parsed (about 2-3 times its size in memory while it is), where a multipart upload is spooled to disk. 32 MiB holds about 13 minutes of 16 kHz mono 16-bit WAV as base64 (`audio_base64` of `/v1/tasks/run`). `max_request_body_bytes` still applies when it is lower.',
      }),
      countSetting(
        'max_websocket_message_bytes',
        8 << 20,
        ['largest realtime event or bridge frame, past it', 'the socket closes 1009, 0 = no limit'],
        {
          zero: 'no limit',
          meaning:
            'Largest message a client may send on a WebSocket: a realtime event (`/v1/realtime`) or a bridge frame. A larger one closes its socket with 1009. The WebSocket library receives a message whole before voxd sees any of it, joining and unmasking it on the main thread at a few milliseconds a MiB on 2 cores, so this bounds how long one message can hold every other client; voxd then reads it a slice at a time. 8 MiB carries 131 s of 24 kHz PCM16 in one `input_audio_buffer.append` (OpenAI allows 15 MiB of audio an event) or a 6 MiB body as base64 in a bridge frame; larger uploads go over HTTP, or raise this knowing the cost. A bridge frame is also held to the request body limits.',
        },
      ),
      countSetting(
        'max_inflight_body_bytes',
        DEFAULT_MAX_INFLIGHT_BODY_BYTES,
        ['request body bytes held at once over all requests, past it 503,', '0 = no limit'],
        {
          zero: 'no limit',
          meaning:
            "The server-wide budget of client bytes held in memory at once, over every request and streaming session. A JSON body's declared Content-Length is taken from it when its reading starts (a chunked body's bytes as they arrive; a multipart upload's bytes while they are in memory, not the parts spooled to disk) and given back when its response ends, however it ends. A body that does not fit is answered 503 `server_busy` (code `body_budget`) with `Retry-After`, before it is read. Streaming sessions hold their audio and messages on the same budget: a realtime session's events waiting and its buffered and committed audio, a Wyoming utterance and the events waiting, a bridge socket's frames waiting behind its running request, a Deepgram `/v1/listen` socket's messages waiting and audio not yet transcribed, a `/v1/speak` socket's messages waiting and text not yet spoken; past it a realtime event gets an `error` event, a Wyoming exchange an `error` event and a bridge frame a 503 response frame, all `body_budget`, a `/v1/speak` message a `Warning` (`BUFFER_FULL`) and a `/v1/listen` socket is closed with 1011 `NET-0000`. The default keeps the bodies of 16 default-sized JSON requests in memory at once, a peak of about 1.5 GB.",
        },
      ),
      countSetting(
        'body_deadline_ms',
        300_000,
        ['answer 408 when a whole body takes longer, 0 = off;', 'live routes keep their live_ingest limits'],
        {
          zero: 'no limit',
          meaning:
            "The whole JSON or multipart request body must have arrived this long after the request's headers did; later is answered 408 `timeout_error` and the connection closed, so a client trickling a byte at a time (which `body_timeout_ms` never catches) cannot hold a connection for good. 300000 is node's own default `requestTimeout`, which voxd lifts for the sake of the live routes; those are bounded by `live_ingest` instead. At the default a 256 MiB upload needs about 1 MB/s.",
        },
      ),
      countSetting(
        'max_connections',
        512,
        [
          'open client connections at most, HTTP and Wyoming together;',
          'past it refused and closed, 0 = no limit',
        ],
        {
          zero: 'no limit',
          meaning:
            "Client connections the server keeps open at once over every listener, HTTP (idle keep-alive ones included) and Wyoming ([wyoming.md](wyoming.md)) counted together. A WebSocket (a realtime session, a bridge socket) is the connection it was upgraded from and counts once, however many requests it carries; the bridge's in-process requests are not client connections and do not count. An HTTP connection past it is answered at once with 503 `server_busy` (code `too_many_connections`, `Retry-After: 1`, `Connection: close`) and closed, without reading its request; a Wyoming one hears an `error` event (code `too_many_connections`) and is closed. What a refused client still sends is read and dropped, and its socket destroyed once it closes its side or after 2 s.",
        },
      ),
      countSetting(
        'max_realtime_sessions',
        256,
        ['realtime WebSocket sessions at most, past it 503, 0 = no limit'],
        {
          zero: 'no limit',
          meaning:
            'Realtime sessions (`/v1/realtime`, [realtime.md](realtime.md)) open at once. One more is refused at its upgrade with 503 `server_busy` (code `too_many_sessions`, `Retry-After: 1`). Each session is also a connection under `max_connections`.',
        },
      ),
      countSetting(
        'max_client_secrets',
        1024,
        ['ephemeral realtime keys live at once, past it 503, 0 = minting off'],
        {
          zero: 'none minted (403)',
          meaning:
            'Ephemeral keys (`ek_...`) minted by `POST /v1/realtime/client_secrets` and `/v1/realtime/transcription_sessions` ([realtime.md](realtime.md)) that are alive at once. Each lives 10 to 7200 s (600 by default, as the minting request says); one more is refused with 503 `server_busy` (code `too_many_client_secrets`) and `Retry-After` the seconds until the soonest expires. The keys are kept in memory only, a few hundred bytes each, and die with the process.',
        },
      ),
      countSetting(
        'realtime_idle_timeout_ms',
        300_000,
        ['close a realtime session that sends nothing this long, 0 = never'],
        {
          zero: 'never',
          meaning:
            "A realtime session whose client sends no event for this long gets an `error` event (code `session_idle_timeout`) and is closed with 1000. A turn waiting for its slot or being transcribed does not count as idle; a live turn (server VAD with a streaming engine) waiting for the client's audio does, and is cancelled with the session, so a client that stops sending mid-speech frees the model's slot. Pings answered by the client's WebSocket library do not count: an event does.",
        },
      ),
      countSetting(
        'wyoming_idle_timeout_ms',
        300_000,
        ['close a Wyoming connection that sends no whole event this long, 0 = never'],
        {
          zero: 'never',
          meaning:
            'A Wyoming connection ([wyoming.md](wyoming.md)) whose client sends no whole event for this long while voxd is not working on one of its events gets an `error` event (code `session_idle_timeout`) and is closed, and its exchange cancelled. A transcription waiting for its audio counts as idle, also one whose model already hears it live (holding its slot); one waiting for its slot or its answer does not. Bytes are not events: an event whose first byte has come must be whole within 30 s, or within this timeout when shorter (30 s also when this is 0), else the connection is closed the same way.',
        },
      ),
      countSetting(
        'bridge_idle_timeout_ms',
        300_000,
        ['close a bridge WebSocket that sends no frame this long, 0 = never'],
        {
          zero: 'never',
          meaning:
            "A WebSocket of the bridge ([websocket-bridge.md](websocket-bridge.md)) that sends no frame for this long while none of its requests runs or waits is closed with 1000 (reason `session_idle_timeout`). Pings answered by the client's WebSocket library do not count: a frame does.",
        },
      ),
      countSetting(
        'realtime_max_session_ms',
        3_600_000,
        ['close a realtime session this long after it opened, 0 = never'],
        {
          zero: 'never',
          meaning:
            "A realtime session's longest life (OpenAI's is 60 minutes): then it gets an `error` event (code `session_expired`) and is closed with 1000 at once, its turn in progress cancelled and the turn's slot freed. A client reconnects for a new session.",
        },
      ),
      countSetting(
        'max_deepgram_sessions',
        256,
        ['Deepgram WebSocket sessions (/v1/listen, /v1/speak) at most, past it 503, 0 = no limit'],
        {
          zero: 'no limit',
          meaning:
            'Deepgram sessions (`/v1/listen` and `/v1/speak` WebSockets, [deepgram.md](deepgram.md)) open at once, both kinds together. One more is refused at its upgrade with 503 `server_busy` (code `too_many_sessions`, `Retry-After: 1`). Each session is also a connection under `max_connections`.',
        },
      ),
      countSetting(
        'deepgram_idle_timeout_ms',
        10_000,
        ['close a Deepgram session that sends nothing this long, 0 = never'],
        {
          zero: 'never',
          meaning:
            "A Deepgram session whose client sends no message (audio, text, `KeepAlive`) for this long is closed with 1011 and reason `NET-0001`, as Deepgram closes its own after 10 s (its clients send `KeepAlive` every few seconds). A `/v1/speak` socket is not idle while it speaks, nor a `/v1/listen` socket while it finishes a transcript; a live utterance waiting for the client's audio is, so a client that stops sending mid-speech frees the model's slot.",
        },
      ),
      countSetting(
        'deepgram_max_session_ms',
        3_600_000,
        ['close a Deepgram session this long after it opened, 0 = never'],
        {
          zero: 'never',
          meaning:
            "A Deepgram session's longest life: then it is closed with 1011 at once (what it was doing cancelled and its slot freed). A client reconnects for a new session.",
        },
      ),
      define('live_ingest', bespoke<LiveIngestConfig>(), {
        doc: {
          type: 'object',
          default: 'see below',
          allowed: '',
          meaning:
            "Limits of the live routes' chunked request bodies ([api.md](api.md#live-routes-post-v1audiotranscriptionslive-and-v1audiospeechlive)); `send_timeout_ms` also bounds how long any streamed response waits for a client that stops reading.",
        },
      }),
      countSetting('max_audio_seconds', 10_800, ['longest input audio, 0 = no limit'], {
        zero: 'no limit',
        note: "Server-wide; a model's own `max_audio_seconds` still wins.",
        meaning:
          "Longest input audio a request may carry (upload, base64, server file, each batch item, a live body), checked from the WAV header before any sample is decoded: longer is a 413. A model's own `max_audio_seconds` wins.",
      }),
      countSetting('max_input_chars', 100_000, ['longest speech input text, 0 = no limit'], {
        zero: 'no limit',
        note: "Server-wide; a model's own `max_input_chars` still wins.",
        meaning:
          "Longest text a speech model (task `tts`, `clon`, `vdes`) is asked to speak, in characters (code points): `input` of `/v1/audio/speech` and `/v1/audio/speech/live`, `text` of the `/v1/tasks/*` routes. Longer text is a 400 naming the field and the limit. A model's own `max_input_chars` wins.",
      }),
      define('diarization_text_model', string(false), {
        default: 'pocketsphinx',
        doc: {
          allowed: 'a model id or alias, or empty',
          meaning:
            "The ASR model whose text goes with a diarization model's speakers. A diarizer finds who spoke when and hears no words; a transcription by one (`POST /v1/audio/transcriptions` and `/details`, not streamed; `gpt-4o-transcribe-diarize` names the embedded `diarizer`) also runs this model on the same audio, at the same time, and answers with its text, words and language beside the speaker turns, so `json` and `text` carry the words and each `diarized_json` segment the words spoken in it (see [api.md](api.md)). When it names no registered ASR model, or is empty, a diarizer answers with speaker turns and an empty text, as before.",
        },
      }),
      define('chunking_vad_model', string(true), {
        default: 'silero-vad',
        doc: {
          allowed: 'a model id',
          meaning:
            'The model (family `silero_vad`) that finds speech: the silences where a transcription\'s `chunking_strategy` cuts long audio (see [api.md](api.md), POST /v1/audio/transcriptions), and the turns of a realtime session under server VAD ([realtime.md](realtime.md)). Without a config file the embedded `silero-vad` model serves; with one, register it (`{ "id": "silero-vad", "family": "silero_vad", "task": "vad" }`). When no model has this id but exactly one `silero_vad` model is registered, whatever its id, that one serves. A request with `chunking_strategy` when none is found is a 400 naming this key; a realtime session asking for server VAD gets an error event naming it.',
        },
      }),
    ],
  },
  {
    heading: 'Audio formats:',
    settings: [
      define('ffmpeg_path', string(true), {
        flag: { value: 'text', arg: '<path>', help: ['the ffmpeg binary for formats other than WAV/PCM'] },
        default: 'ffmpeg',
        doc: {
          default: '`ffmpeg` (looked up on `PATH`)',
          allowed: 'a binary',
          meaning:
            "The ffmpeg that decodes uploads other than WAV and encodes speech as mp3, opus, aac and flac. Checked at startup (`ffmpeg -encoders`), which logs one line saying what the server can serve; without it WAV and PCM keep working and other formats are 400s naming ffmpeg. The set-up installs Debian's ffmpeg when run as root.",
        },
      }),
      countSetting(
        'ffmpeg_timeout_ms',
        120_000,
        ['stop an ffmpeg decode or encode running longer, 0 = no limit'],
        {
          zero: 'no limit',
          meaning: 'An ffmpeg decode or encode running longer is killed and the request answered 503.',
        },
      ),
      countSetting(
        'ffmpeg_decode_stall_ms',
        10_000,
        ['stop an ffmpeg decode that makes no audio for this long, 0 = no limit'],
        {
          zero: 'no limit',
          meaning:
            'An ffmpeg decode that writes no decoded audio for this long (at its start or later) is killed and the request answered 400: an input that makes no audio gives its child back long before `ffmpeg_timeout_ms`. Real audio decodes within milliseconds.',
        },
      ),
      define('default_speech_format', oneOf(SPEECH_FORMATS), {
        flag: {
          value: 'text',
          arg: '<f>',
          help: [
            'speech format when a request names none: wav|pcm|mp3|opus|aac|flac;',
            'mp3 answers as the OpenAI API does',
          ],
        },
        default: 'wav',
        doc: {
          allowed: '`wav`, `pcm`, `mp3`, `opus`, `aac`, `flac`',
          meaning:
            'The `/v1/audio/speech` format when a request names none. `wav` keeps audio.cpp clients as they are; `mp3` answers as the OpenAI API does.',
        },
      }),
    ],
  },
  {
    heading: 'Paths (relative to the current directory):',
    settings: [
      define('file_roots', bespoke<string[]>(), {
        flag: {
          value: 'text',
          arg: '<dir,...>',
          help: ['folders requests may name server files in'],
          helpDefault: "the config file's folder and --voice-dir; none without a config",
          note: 'Comma-separated; relative to the cwd; each must exist. Replaces the default roots.',
        },
        doc: {
          type: 'array of folders',
          default: "the config file's folder and `voice_dir`; none without `--config`",
          allowed: "existing folders, relative to the config file's folder",
          meaning:
            'The only folders under which a request may name a server-local file (`audio`, `voice_ref`, path options), compared after symlinks are resolved. Anything else is a 403 that names the roots. `[]` turns server paths off.',
        },
      }),
      define('model_spec_override', bespoke<string>(), {
        config: 'optional',
        flag: {
          value: 'text',
          arg: '<path>',
          help: ['model spec JSON file or folder of <family>.json'],
          note: 'Relative to the cwd.',
        },
        doc: {
          type: 'string',
          allowed: 'non-empty path',
          meaning: 'Resolved and kept; engines do not read model specs yet (logged as a notice).',
        },
      }),
      define('voice_dir', bespoke<string>(), {
        config: 'optional',
        flag: {
          value: 'text',
          arg: '<dir>',
          help: ['voice library folder of *.wav files'],
          note: 'Relative to the cwd; must exist.',
        },
        doc: {
          type: 'string',
          allowed: 'an existing folder',
          meaning:
            'Voice library: `<name>.wav` files plus an optional `prompt_text` file of `name\\|transcript` lines.',
        },
      }),
      define('models_root', bespoke<string>(), {
        flag: {
          value: 'text',
          arg: '<dir>',
          help: ['installed model packages, made at startup'],
          helpDefault: '$VOXD_DATA_DIR/models, else ~/.local/share/voxd/models',
          note: 'Relative to the cwd; made when missing.',
        },
        doc: {
          type: 'string',
          default:
            '`$VOXD_DATA_DIR/models`, else `$XDG_DATA_HOME/voxd/models`, else `~/.local/share/voxd/models`',
          allowed: "a folder, relative to the config file's folder",
          meaning:
            'Where installed model packages live; made at startup (a root that cannot be made stops startup with exit 2). Changeable at run time with `POST /v1/ui/models-root` (api.md).',
        },
      }),
      // Read into ServerConfig's `tls`, with tls_key_file.
      define('tls_cert_file', bespoke<string>(), {
        config: 'none',
        flag: {
          name: '--tls-cert',
          value: 'text',
          arg: '<file>',
          help: ['serve HTTPS with this PEM certificate chain (with --tls-key)'],
        },
        doc: {
          type: 'string',
          allowed: 'a readable PEM file; both or neither',
          meaning:
            'Serve HTTPS instead of HTTP with this certificate chain and private key (read at startup). The HTTPS listener takes the same routes, limits, streams and shutdown as the plain one.',
        },
      }),
      define('tls_key_file', bespoke<string>(), {
        config: 'none',
        flag: {
          name: '--tls-key',
          value: 'text',
          arg: '<file>',
          help: ['the PEM private key of --tls-cert'],
        },
        doc: {
          type: 'string',
          allowed: 'a readable PEM file; both or neither',
          meaning: "The private key of `tls_cert_file`'s certificate (read at startup).",
        },
      }),
    ],
  },
  {
    heading: 'Model installer (docs/models.md):',
    settings: [
      countSetting(
        'max_download_bytes',
        16 * GiB,
        ['largest file one package download may bring, 0 = no limit'],
        {
          zero: 'no limit',
          meaning:
            'Largest file one install download may bring: a larger declared size is refused before a byte is written, and a body without Content-Length is cut (its `.part` deleted) once it passes this or the free space found when it started. The job fails with `E_PACKAGE_TOO_LARGE`.',
        },
      ),
      countSetting(
        'max_package_bytes',
        32 * GiB,
        ['most bytes one package archive may expand to, 0 = no limit'],
        {
          zero: 'no limit',
          meaning:
            'Most bytes one package archive may expand to, summed from its listing before anything is extracted (the free space of the models root is checked the same way); an archive of more than 20,000 entries is refused too. The job fails with `E_PACKAGE_TOO_LARGE` (or `E_INSUFFICIENT_STORAGE`) and nothing is left behind.',
        },
      ),
      switchSetting(
        'installer_allow_private_hosts',
        false,
        ['let installs download from loopback, link-local and private', 'addresses'],
        {
          note: 'Can only turn it on.',
          meaning:
            'Lets install downloads target loopback, link-local, private, shared and reserved addresses (by IP in the URL, by name once resolved, on every redirect). Off: such a URL is a 400, and a name or redirect leading there fails the job. The origins of `VOXD_GITHUB_BASE_URL` and `VOXD_HF_BASE_URL` (operator-set mirrors) are always allowed; their redirects elsewhere are checked. See [models.md](models.md#download-targets).',
        },
      ),
    ],
  },
  {
    heading: "Frontends (audio.cpp's optional listeners, on voxd's own port; docs/websocket-bridge.md):",
    settings: [
      define('frontend_listener', bespoke<FrontendListener>(), {
        flag: {
          value: 'text',
          arg: '<name>',
          help: [
            'frontend listener: https (TLS, with --frontend-option',
            'cert_file=, key_file=) or websocket',
          ],
          note: '`https` or `websocket`; any other name is an error.',
        },
        default: '',
        doc: {
          type: 'string',
          allowed: '`""`, `"https"`, `"websocket"`',
          meaning:
            "`websocket`: audio.cpp's WebSocket bridge on voxd's port: a WebSocket to a route's path takes one request per text frame and answers each with a response frame ([websocket-bridge.md](websocket-bridge.md)); `/v1/realtime` stays the realtime API. `https`: serve HTTPS with `frontend_options` `cert_file` and `key_file` (the same TLS as `tls_cert_file`/`tls_key_file`, which it also accepts). Any other name stops startup.",
        },
      }),
      define('frontend_options', bespoke<OptionMap>(), {
        flag: {
          name: '--frontend-option',
          value: 'pair',
          arg: 'key=value',
          help: ['frontend option, repeatable; needs --frontend-listener'],
          note: 'Repeatable; an error without `--frontend-listener`. Paths are relative to the cwd.',
        },
        default: {},
        doc: {
          type: 'object',
          allowed: 'option map',
          meaning:
            "The listener's options: `https` reads `cert_file` and `key_file` (PEM files, relative to the config file's folder; not together with `tls_cert_file`/`tls_key_file`); `websocket` reads none. Options the listener does not read, or any without a listener, are ignored with a notice.",
        },
      }),
    ],
  },
  {
    heading: 'Security (docs/configuration.md#api-keys):',
    settings: [
      define('api_keys', bespoke<ApiKey[]>(), {
        default: [],
        doc: {
          type: 'array',
          allowed: '`{"key": "...", "scope": "inference" \\| "admin"}` objects',
          meaning: 'API keys; see [API keys](#api-keys).',
        },
      }),
      // Read into ServerConfig's `api_keys`, with api_keys and $VOXD_API_KEYS.
      define('api_keys_file', bespoke<string>(), {
        config: 'none',
        flag: {
          value: 'text',
          arg: '<file>',
          help: [
            'API keys, one "KEY SCOPE" a line (scope inference or admin); they',
            "merge with server.json's api_keys and $VOXD_API_KEYS",
          ],
          note: 'Relative to the cwd. See [API keys](#api-keys).',
        },
        doc: {
          type: 'string',
          allowed: "a readable file, relative to the config file's folder",
          meaning: 'More keys, one `KEY SCOPE` a line (see [API keys](#api-keys)).',
        },
      }),
      define('open_endpoints', bespoke<string[]>(), {
        doc: {
          type: 'array',
          default: '`["/health", "/ready", "/metrics"]`',
          allowed: 'paths among those three',
          meaning: 'Answered without a key when keys are set; `[]` closes them too.',
        },
      }),
      switchSetting('insecure', false, ['serve without keys on a non-loopback host, refused otherwise'], {
        note: 'Can only turn it on.',
        meaning: 'Serve without keys on a host other than loopback (see [API keys](#api-keys)).',
      }),
      define('enable_fixture', bespoke<boolean>(), {
        file: false,
        flag: {
          value: 'switch',
          help: ['serve the fixture test engine, also VOXD_ENABLE_FIXTURE=1'],
          note: 'Flag only (or `VOXD_ENABLE_FIXTURE=1`). Serves the `fixture` test engine, off otherwise ([fixture-engine.md](fixture-engine.md)).',
        },
        default: false,
      }),
    ],
  },
  {
    heading: 'Logging:',
    settings: [
      define('log', bespoke<boolean>(), {
        file: false,
        flag: {
          value: 'switch',
          help: ['log requests to stderr'],
          note: 'Flag only. Logs one line per request at `info` (without it request lines are `debug`), with `msg` `POST /v1/tasks/run 200 50.6 ms` and the fields of [observability.md](observability.md#logs). A client that left is 499 and says when: `POST /v1/tasks/run 499 12.0 ms: client closed the connection while sending the request body` (or `while waiting for the response`, `while receiving the response`); a body whose chunked framing broke says `malformed request (HPE_...)` with the status sent. A client leaving is never logged as a fault (no stack trace), with or without `--log`; engine and internal faults are logged with their stack either way.',
        },
        default: false,
      }),
      define('log_file', bespoke<string>(), {
        file: false,
        config: 'optional',
        flag: {
          value: 'path',
          arg: '<path>',
          help: ['write the log to this file instead of stderr'],
          note: 'Flag only. Relative to the cwd. All log lines (notices, request lines, errors) then go to this file, as JSON lines, instead of stderr.',
        },
      }),
      define('log_level', oneOf(LOG_LEVELS), {
        flag: {
          value: 'text',
          arg: '<level>',
          help: ['trace, debug, info, warn, error, fatal or silent'],
        },
        default: 'info',
        doc: {
          allowed: '`trace`, `debug`, `info`, `warn`, `error`, `fatal`, `silent`',
          meaning:
            'The least severe log line written (`--log-level`). Request lines are `info` with `--log`, else `debug`; faults are `error`. See [observability.md](observability.md#logs).',
        },
      }),
      define('log_request_body', bespoke<boolean>(), {
        default: false,
        doc: {
          type: 'boolean',
          allowed: '',
          meaning:
            'With `--log`, also log each JSON request body (never audio uploads, never any header); without `--log` a notice says it has no effect.',
        },
      }),
    ],
  },
  {
    heading: 'Models:',
    settings: [
      define('models', bespoke<ModelConfig[]>(), {
        doc: {
          type: 'array',
          default: '',
          allowed: 'model objects',
          meaning: 'Required and non-empty, unless `ui_management` is true (then it may be absent or `[]`).',
        },
      }),
      define('model_aliases', bespoke<Readonly<Record<string, string>>>(), {
        flag: {
          name: '--model-alias',
          value: 'pair',
          arg: 'name=id',
          help: [
            'another name requests may use for model <id>, repeatable; "name="',
            'removes a default (whisper-1 and tts-1 name the embedded models)',
          ],
          note: 'Repeatable; adds to or overrides `model_aliases` name by name. See [Model aliases](#model-aliases).',
        },
        doc: {
          type: 'object',
          default:
            '`whisper-1`, `gpt-4o-transcribe`, `gpt-4o-mini-transcribe`, `gpt-realtime-whisper` → `pocketsphinx`; `gpt-4o-transcribe-diarize` → `diarizer`; `tts-1`, `tts-1-hd`, `gpt-4o-mini-tts` → `flite`',
          allowed: '`"name": "model id"` pairs; `null` removes a default name',
          meaning:
            'Other names a request may give in `model`; they add to and override the defaults. A model id always wins over an alias (see [Model aliases](#model-aliases)).',
        },
      }),
      define('lazy_load', boolean(), {
        doc: {
          default: '`false` with a config file, `true` without',
          allowed: '',
          meaning: "Default for each model's `lazy`.",
        },
      }),
    ],
  },
  {
    heading: '',
    settings: [
      command({
        name: '--version',
        value: 'switch',
        to: 'version',
        help: ['print the version and exit'],
        note: 'Prints `voxd 0.1.0`.',
      }),
      command({
        name: '--help',
        value: 'switch',
        to: 'help',
        aliases: ['-h'],
        help: ['print this help and exit'],
        note: 'Prints the flag list.',
      }),
    ],
  },
] satisfies readonly SettingGroup[];

/** In --help order; the docs tables follow the same order. */
export const SETTING_GROUPS: readonly SettingGroup[] = GROUPS;

/** Every keyed entry of the table, each with its own type: what ServerConfig and CliOverrides are made of. */
export type SettingEntry = Extract<(typeof GROUPS)[number]['settings'][number], { key: string }>;

type EntryByKey = { [E in SettingEntry as E['key']]: E };

/** A key of ServerConfig that the table holds. */
export type ConfigKey = keyof ConfigOf<SettingEntry>;

export const SETTINGS: readonly Setting[] = SETTING_GROUPS.flatMap((group) => group.settings);

const BY_KEY = new Map(SETTINGS.filter((s) => s.key !== undefined).map((s) => [s.key!, s]));

/** The setting of a key, typed as its entry (its default is its ServerConfig field's type). */
export function setting<K extends keyof EntryByKey>(key: K): EntryByKey[K] {
  const found = BY_KEY.get(key);
  // The type allows only the table's keys; a name from elsewhere (a cast) is a programming error.
  if (found === undefined) throw new Error(`no setting named ${key}`);
  return found as EntryByKey[K];
}

/** Every top-level key of server.json. */
export const FILE_KEYS: ReadonlySet<string> = new Set(SETTINGS.filter((s) => s.file).map((s) => s.key!));

/** Checks a value given under `key` (the config key or the flag) against a table rule. */
export function checkRule(rule: Rule, value: unknown, key: string): unknown {
  switch (rule.kind) {
    case 'count':
      return expectInteger(value, key, { min: 0 });
    case 'integer':
      return expectInteger(value, key, rule);
    case 'boolean':
      return expectBoolean(value, key);
    case 'oneOf':
      if (rule.expected === undefined) return expectOneOf(value, key, rule.values);
      if (typeof value !== 'string' || !rule.values.includes(value)) {
        throw ConfigError.invalid(key, value, rule.expected);
      }
      return value;
    case 'string':
      return expectString(value, key, rule);
    case 'ip':
      return expectIp(value, key);
    case 'hosts':
      return expectHosts(value, key);
    case 'bespoke':
      throw new Error(`${key} has a bespoke rule; its own code checks it`);
  }
}

/** A host name as a Host header or a URL carries it, without port; a leading `.` takes the subdomains. */
const HOST_NAME = /^\.?(?:[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?\.)*[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?$/i;

/**
 * allowed_hosts: an array of names (server.json), or the flag's comma-separated text. A name is
 * compared with the Host header without its port, so one with a scheme or a port could never
 * match and is refused; `*` stands alone.
 */
function expectHosts(value: unknown, key: string): readonly string[] {
  const expected = 'host names such as "voxd.example.com" (no scheme, no port), or "*" alone';
  // The flag's text (`key` is then the flag's name): `--allowed-hosts ''` is the empty list.
  const text = typeof value === 'string' && key.startsWith('--');
  const names = text ? (value.trim() === '' ? [] : value.split(',').map((name) => name.trim())) : value;
  if (!Array.isArray(names)) throw ConfigError.invalid(key, value, `an array of ${expected}`);
  for (const [i, name] of names.entries()) {
    const valid =
      typeof name === 'string' &&
      (name === '*' || HOST_NAME.test(name) || isIP(name.replace(/^\[|\]$/g, '')) !== 0);
    if (!valid) throw ConfigError.invalid(text ? key : `${key}[${i}]`, name, expected);
  }
  if (names.includes('*') && names.length > 1)
    throw ConfigError.invalid(key, value, `"*" alone (it allows every host already)`);
  return names as readonly string[];
}

/**
 * audio.cpp binds IPv4 literals only. voxd accepts any IP literal (IPv6 too, such as "::1") because
 * Node binds both families; host names are refused so startup never waits on DNS.
 */
function expectIp(value: unknown, key: string): string {
  const host = expectString(value, key);
  if (isIP(host) === 0) throw ConfigError.invalid(key, host, 'an IP address literal such as "127.0.0.1"');
  return host;
}
