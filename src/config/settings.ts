/**
 * The server settings, each listed once: its server.json key, its `voxd serve` flag, its default,
 * the rule the config loader checks it by, its --help lines and its docs/configuration.md rows. The
 * flag parser (src/cli/args.ts), the --help text, the config loader (server-config.ts) and the
 * generated tables of the docs (settings-docs.ts) are all read off this table, so a setting cannot
 * be added to one of them and forgotten in another.
 */
import { isIP } from 'node:net';
import { LOG_LEVELS } from '../observability/log-levels.js';
import { ConfigError, expectBoolean, expectInteger, expectOneOf, expectString } from './errors.js';

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
  | { kind: 'bespoke' };

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
  /** --help's description, one string per line of the help text. */
  help: readonly string[];
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

export interface Setting {
  /** The server.json key, or for a flag-only setting the CliOverrides field; none for --config and the like. */
  key?: string;
  /** Whether server.json has the key (flag-only settings such as `log` are unknown keys there). */
  file: boolean;
  flag?: Flag;
  default?: unknown;
  rule?: Rule;
  doc?: KeyDoc;
}

export interface SettingGroup {
  /** The --help heading of the group's flags; empty for the closing --version and --help. */
  heading: string;
  settings: readonly Setting[];
}

/**
 * Fits hours of compressed audio or about two hours of 16 kHz WAV; multipart uploads past a
 * megabyte are spooled to disk, so this bounds disk use more than memory.
 */
const DEFAULT_MAX_BODY_BYTES = 256 * 1024 * 1024;

/**
 * A JSON body is held whole and parsed: 32 MiB is about 13 minutes of 16 kHz mono 16-bit WAV as
 * base64, and at 2-3 times its size while parsed, twenty such bodies at once stay in a few GB.
 */
const DEFAULT_MAX_JSON_BODY_BYTES = 32 * 1024 * 1024;

/** Sixteen default-sized JSON bodies at once: about 1.5 GB at their peak, which a 2-core 24 GiB machine survives. */
const DEFAULT_MAX_INFLIGHT_BODY_BYTES = 512 * 1024 * 1024;

export const SPEECH_FORMATS = ['wav', 'pcm', 'mp3', 'opus', 'aac', 'flac'] as const;

/** In --help order; the docs tables follow the same order. */
export const SETTING_GROUPS: readonly SettingGroup[] = [
  {
    heading: 'Config:',
    settings: [
      {
        file: false,
        flag: {
          name: '--config',
          value: 'path',
          to: 'configPath',
          arg: '<file>',
          help: [
            'server.json; without it voxd serves its embedded models',
            '(relative paths inside it resolve against its folder)',
          ],
          note: 'Optional: without it voxd serves the embedded models. Resolved against the cwd.',
        },
      },
    ],
  },
  {
    heading: 'Bind:',
    settings: [
      {
        key: 'host',
        file: true,
        flag: {
          name: '--host',
          value: 'text',
          arg: '<ip>',
          help: ['address to listen on (default 127.0.0.1)'],
        },
        default: '127.0.0.1',
        rule: { kind: 'ip' },
        doc: {
          type: 'string',
          allowed: 'an IPv4 or IPv6 address literal',
          meaning: 'Address to listen on. Host names are refused.',
        },
      },
      {
        key: 'port',
        file: true,
        flag: {
          name: '--port',
          value: 'integer',
          arg: '<n>',
          help: ['port, 0 picks a free one (default 8080)'],
        },
        default: 8080,
        rule: {
          kind: 'integer',
          min: 0,
          max: 65535,
          expected: 'an integer in 0..65535 (0 picks a free port)',
        },
        doc: {
          type: 'integer',
          allowed: '0..65535',
          meaning: 'Port; `0` picks a free port (the chosen one is printed).',
        },
      },
    ],
  },
  {
    heading: 'UI and management:',
    settings: [
      {
        key: 'ui',
        file: true,
        flag: {
          name: '--ui',
          value: 'switch',
          help: ['serve the web UI (default on)'],
          negation: { name: '--no-ui', help: ['do not serve the web UI'] },
        },
        default: true,
        rule: { kind: 'boolean' },
        doc: {
          type: 'boolean',
          allowed: '',
          meaning:
            'Serves the web UI (`GET /`, `/ui/*`) and its status stream (`GET /v1/ui/status/stream`); false (`--no-ui`): those answer 404. While true, `OPTIONS` preflights are answered. See [api.md](api.md#web-ui).',
        },
      },
      {
        key: 'ui_management',
        file: true,
        flag: {
          name: '--ui-management',
          value: 'switch',
          help: ['enable model management routes (default off)'],
          note: 'Can only turn management on.',
        },
        default: false,
        rule: { kind: 'boolean' },
        doc: {
          type: 'boolean',
          allowed: '',
          meaning:
            'Enables `POST /v1/models/load` and `POST /v1/models/unload`; also allows an absent or empty `models`.',
        },
      },
      {
        key: 'cors_origins',
        file: true,
        flag: {
          name: '--cors-origins',
          value: 'text',
          arg: '<"" | "*">',
          help: ['CORS: "" off or "*" any origin (default "")'],
        },
        default: '',
        rule: { kind: 'oneOf', values: ['', '*'], expected: '"" (off) or "*"' },
        doc: {
          type: 'string',
          allowed: '`""` or `"*"`',
          meaning: '`"*"` echoes the request\'s `Origin` on every response (see api.md, CORS).',
        },
      },
    ],
  },
  {
    heading: 'Backend (accepted for audio.cpp compatibility; voxd engines run on the CPU):',
    settings: [
      {
        key: 'backend',
        file: true,
        flag: {
          name: '--backend',
          value: 'text',
          arg: '<name>',
          help: ['cpu|cuda|hip|rocm|vulkan|metal (default cpu)'],
        },
        default: 'cpu',
        rule: { kind: 'bespoke' },
        doc: {
          type: 'string',
          allowed: '`cpu`, `cuda`, `hip`, `rocm` (= `hip`), `vulkan`, `metal`; `best` is refused',
          meaning:
            'voxd engines run on the CPU. Any other value is accepted, ignored, and logged as a notice.',
        },
      },
      {
        key: 'device',
        file: true,
        flag: { name: '--device', value: 'integer', arg: '<n>', help: ['device index (default 0)'] },
        default: 0,
        rule: { kind: 'count' },
        doc: {
          type: 'integer',
          allowed: '>= 0',
          meaning: 'Passed to engines; a non-zero value is logged as ignored.',
        },
      },
      {
        key: 'threads',
        file: true,
        flag: {
          name: '--threads',
          value: 'integer',
          arg: '<n>',
          help: ['compute threads per session, > 0 (default 1)'],
        },
        default: 1,
        rule: { kind: 'integer', min: 1 },
        doc: {
          type: 'integer',
          allowed: '>= 1',
          meaning:
            "Compute threads per session (audio.cpp's key). Checked and passed in each engine's load spec, but voxd's engines use one compute thread per session today (sherpa-onnx `num_threads` 1): run more slots for more parallelism.",
        },
      },
    ],
  },
  {
    heading: 'Timeouts and residency:',
    settings: [
      {
        key: 'busy_timeout_ms',
        file: true,
        flag: {
          name: '--busy-timeout-ms',
          value: 'integer',
          arg: '<ms>',
          help: ['max wait for a busy model, 0 = unbounded (default 300000)'],
        },
        default: 300_000,
        rule: { kind: 'count' },
        doc: {
          type: 'integer',
          allowed: '>= 0, `0` = wait without limit',
          meaning:
            'Server-wide ceiling on how long a request waits for a busy model. See [Busy timeout](#busy-timeout).',
        },
      },
      {
        key: 'max_queued_requests',
        file: true,
        flag: {
          name: '--max-queued-requests',
          value: 'integer',
          arg: '<n>',
          help: ['requests that may wait per model, 0 = unbounded (default 0)'],
        },
        // Unbounded, as audio.cpp: busy_timeout_ms already limits each wait (docs/configuration.md).
        default: 0,
        rule: { kind: 'count' },
        doc: {
          type: 'integer',
          allowed: '>= 0, `0` = unbounded',
          meaning:
            "How many requests may wait for each model's slots; one more is refused at once with 503 `queue_full`. See [Queue bound](#queue-bound).",
        },
      },
      {
        key: 'ready_when_saturated',
        file: true,
        flag: {
          name: '--ready-when-saturated',
          value: 'switch',
          help: ["/ready answers 503 while every loaded model's queue is full"],
          note: 'Can only turn it on.',
        },
        default: false,
        rule: { kind: 'boolean' },
        doc: {
          type: 'boolean',
          allowed: '',
          meaning:
            "`/ready` answers 503 while every loaded model's queue is full. See [Queue bound](#queue-bound).",
        },
      },
      {
        key: 'max_loaded_models',
        file: true,
        flag: {
          name: '--max-loaded-models',
          value: 'integer',
          arg: '<n>',
          help: ['LRU limit on resident models, 0 = no limit (default 0)'],
        },
        default: 0,
        rule: { kind: 'count' },
        doc: {
          type: 'integer',
          allowed: '>= 0, `0` = no limit',
          meaning: 'Most models resident at once. See [Residency](#residency).',
        },
      },
      {
        key: 'idle_unload_ms',
        file: true,
        flag: {
          name: '--idle-unload-ms',
          value: 'integer',
          arg: '<ms>',
          help: ['unload idle models after this long, 0 = off (default 0)'],
        },
        default: 0,
        rule: { kind: 'count' },
        doc: { type: 'integer', allowed: '>= 0, `0` = off', meaning: 'Unload a model idle this long.' },
      },
      {
        key: 'shutdown_timeout_ms',
        file: true,
        flag: {
          name: '--shutdown-timeout-ms',
          value: 'integer',
          arg: '<ms>',
          help: [
            'on SIGTERM/SIGINT, how long running requests may finish before they',
            'are cancelled, 0 = no limit (default 30000)',
          ],
        },
        default: 30_000,
        rule: { kind: 'count' },
        doc: {
          type: 'integer',
          allowed: '>= 0, `0` = no limit',
          meaning:
            'On SIGTERM/SIGINT, how long running requests may finish before they are cancelled (see Shutdown below).',
        },
      },
      {
        key: 'max_inference_ms',
        file: true,
        flag: {
          name: '--max-inference-ms',
          value: 'integer',
          arg: '<ms>',
          help: ['cancel (504) a request running longer, 0 = off (default 0)'],
        },
        default: 0,
        rule: { kind: 'count' },
        doc: {
          type: 'integer',
          allowed: '>= 0, `0` = off',
          meaning:
            "The inference watchdog: a request running longer is cancelled for real (its worker thread terminated, its runner process killed; the session is replaced on the next request) and answered 504 `timeout_error`. The time counts from when the model is ready: a cold load the request waits for first (after an eviction, an idle retirement, a reconfiguration) is not counted; starting a session's runner process is. A model's own `max_inference_ms` wins.",
        },
      },
      {
        key: 'min_free_memory_mb',
        file: true,
        flag: {
          name: '--min-free-memory-mb',
          value: 'integer',
          arg: '<mb>',
          help: ['refuse loads below this free memory, 0 = off (default 0)'],
        },
        default: 0,
        rule: { kind: 'count' },
        doc: {
          type: 'integer',
          allowed: '>= 0, `0` = off',
          meaning: 'Refuse a load that would leave less free memory than this.',
        },
      },
      {
        key: 'parallel_jobs',
        file: false,
        flag: {
          name: '--parallel-jobs',
          value: 'switch',
          help: ['experimental parallel runtime; enables per-model slots (default off)'],
          note: 'Flag only. Selects the parallel runtime and allows `slots`. Logged at startup.',
        },
        default: false,
        rule: { kind: 'bespoke' },
      },
    ],
  },
  {
    heading: 'Request limits:',
    settings: [
      {
        key: 'max_request_body_bytes',
        file: true,
        flag: {
          name: '--max-request-body-bytes',
          value: 'integer',
          arg: '<n>',
          help: ['largest request body (default 268435456, 256 MiB)'],
        },
        default: DEFAULT_MAX_BODY_BYTES,
        rule: { kind: 'count' },
        doc: {
          type: 'integer',
          default: '`268435456` (256 MiB)',
          allowed: '>= 0',
          meaning:
            "Largest request body (multipart, and JSON up to `max_json_body_bytes`), and largest server-local file a request may name. Larger get 413. Multipart file parts past 1 MiB are spooled to a temporary file rather than held in memory (audio.cpp's default is 2 GiB, all buffered).",
        },
      },
      {
        key: 'body_timeout_ms',
        file: true,
        flag: {
          name: '--body-timeout-ms',
          value: 'integer',
          arg: '<ms>',
          help: [
            'answer 408 when a body sends nothing for this long, 0 = off',
            '(default 30000; live routes keep their live_ingest limits)',
          ],
        },
        default: 30_000,
        rule: { kind: 'count' },
        doc: {
          type: 'integer',
          allowed: '>= 0, `0` = no limit',
          meaning:
            'A JSON or multipart request body that sends nothing for this long (the timer starts over with every chunk) is answered 408 `timeout_error` and its connection closed, so a client that stops half-way through a body cannot hold a connection and its handler forever. The live routes are bounded by `live_ingest` instead.',
        },
      },
      {
        key: 'max_json_body_bytes',
        file: true,
        flag: {
          name: '--max-json-body-bytes',
          value: 'integer',
          arg: '<n>',
          help: ['largest JSON request body (default 33554432, 32 MiB)'],
        },
        default: DEFAULT_MAX_JSON_BODY_BYTES,
        rule: { kind: 'count' },
        doc: {
          type: 'integer',
          default: '`33554432` (32 MiB)',
          allowed: '>= 0',
          meaning:
            'Largest JSON request body; larger gets 413 (a declared Content-Length before any byte is read). Lower than `max_request_body_bytes` because a JSON body is held whole and parsed (about 2-3 times its size in memory while it is), where a multipart upload is spooled to disk. 32 MiB holds about 13 minutes of 16 kHz mono 16-bit WAV as base64 (`audio_base64` of `/v1/tasks/run`). `max_request_body_bytes` still applies when it is lower.',
        },
      },
      {
        key: 'max_inflight_body_bytes',
        file: true,
        flag: {
          name: '--max-inflight-body-bytes',
          value: 'integer',
          arg: '<n>',
          help: [
            'request body bytes held at once over all requests, past it 503,',
            '0 = no limit (default 536870912, 512 MiB)',
          ],
        },
        default: DEFAULT_MAX_INFLIGHT_BODY_BYTES,
        rule: { kind: 'count' },
        doc: {
          type: 'integer',
          default: '`536870912` (512 MiB)',
          allowed: '>= 0, `0` = no limit',
          meaning:
            "The server-wide budget of request body bytes held in memory at once, over every request. A JSON body's declared Content-Length is taken from it when its reading starts (a chunked body's bytes as they arrive; a multipart upload's bytes while they are in memory, not the parts spooled to disk) and given back when its response ends, however it ends. A body that does not fit is answered 503 `server_busy` (code `body_budget`) with `Retry-After`, before it is read. The default keeps the bodies of 16 default-sized JSON requests in memory at once, a peak of about 1.5 GB.",
        },
      },
      {
        key: 'body_deadline_ms',
        file: true,
        flag: {
          name: '--body-deadline-ms',
          value: 'integer',
          arg: '<ms>',
          help: [
            'answer 408 when a whole body takes longer, 0 = off',
            '(default 300000; live routes keep their live_ingest limits)',
          ],
        },
        default: 300_000,
        rule: { kind: 'count' },
        doc: {
          type: 'integer',
          allowed: '>= 0, `0` = no limit',
          meaning:
            "The whole JSON or multipart request body must have arrived this long after the request's headers did; later is answered 408 `timeout_error` and the connection closed, so a client trickling a byte at a time (which `body_timeout_ms` never catches) cannot hold a connection for good. 300000 is node's own default `requestTimeout`, which voxd lifts for the sake of the live routes; those are bounded by `live_ingest` instead. At the default a 256 MiB upload needs about 1 MB/s.",
        },
      },
      {
        key: 'max_connections',
        file: true,
        flag: {
          name: '--max-connections',
          value: 'integer',
          arg: '<n>',
          help: ['open client connections at most, past it 503 and close, 0 = no limit (default 512)'],
        },
        default: 512,
        rule: { kind: 'count' },
        doc: {
          type: 'integer',
          allowed: '>= 0, `0` = no limit',
          meaning:
            'Client connections the server keeps open at once (idle keep-alive ones included). A connection past it is answered at once with 503 `server_busy` (code `too_many_connections`, `Retry-After: 1`, `Connection: close`) and closed, without reading its request.',
        },
      },
      {
        key: 'live_ingest',
        file: true,
        rule: { kind: 'bespoke' },
        doc: {
          type: 'object',
          default: 'see below',
          allowed: '',
          meaning:
            "Limits of the live routes' chunked request bodies ([api.md](api.md#live-routes-post-v1audiotranscriptionslive-and-v1audiospeechlive)); `send_timeout_ms` also bounds how long any streamed response waits for a client that stops reading.",
        },
      },
      {
        key: 'max_audio_seconds',
        file: true,
        flag: {
          name: '--max-audio-seconds',
          value: 'integer',
          arg: '<s>',
          help: ['longest input audio, 0 = no limit (default 10800)'],
          note: "Server-wide; a model's own `max_audio_seconds` still wins.",
        },
        default: 10_800,
        rule: { kind: 'count' },
        doc: {
          type: 'integer',
          allowed: '>= 0, `0` = no limit',
          meaning:
            "Longest input audio a request may carry (upload, base64, server file, each batch item, a live body), checked from the WAV header before any sample is decoded: longer is a 413. A model's own `max_audio_seconds` wins.",
        },
      },
      {
        key: 'max_input_chars',
        file: true,
        flag: {
          name: '--max-input-chars',
          value: 'integer',
          arg: '<n>',
          help: ['longest speech input text, 0 = no limit (default 100000)'],
          note: "Server-wide; a model's own `max_input_chars` still wins.",
        },
        default: 100_000,
        rule: { kind: 'count' },
        doc: {
          type: 'integer',
          allowed: '>= 0, `0` = no limit',
          meaning:
            "Longest text a speech model (task `tts`, `clon`, `vdes`) is asked to speak, in characters (code points): `input` of `/v1/audio/speech` and `/v1/audio/speech/live`, `text` of the `/v1/tasks/*` routes. Longer text is a 400 naming the field and the limit. A model's own `max_input_chars` wins.",
        },
      },
      {
        key: 'chunking_vad_model',
        file: true,
        default: 'silero-vad',
        rule: { kind: 'string', nonEmpty: true },
        doc: {
          type: 'string',
          allowed: 'a model id',
          meaning:
            'The model (family `silero_vad`) that finds the silences where a transcription\'s `chunking_strategy` cuts long audio (see [api.md](api.md), POST /v1/audio/transcriptions). Without a config file the embedded `silero-vad` model serves; with one, register it (`{ "id": "silero-vad", "family": "silero_vad", "task": "vad" }`). A request with `chunking_strategy` when no such model is registered is a 400 naming this key.',
        },
      },
    ],
  },
  {
    heading: 'Audio formats:',
    settings: [
      {
        key: 'ffmpeg_path',
        file: true,
        flag: {
          name: '--ffmpeg-path',
          value: 'text',
          arg: '<path>',
          help: ['the ffmpeg binary for formats other than WAV/PCM (default ffmpeg)'],
        },
        default: 'ffmpeg',
        rule: { kind: 'string', nonEmpty: true },
        doc: {
          type: 'string',
          default: '`ffmpeg` (looked up on `PATH`)',
          allowed: 'a binary',
          meaning:
            "The ffmpeg that decodes uploads other than WAV and encodes speech as mp3, opus, aac and flac. Checked at startup (`ffmpeg -encoders`), which logs one line saying what the server can serve; without it WAV and PCM keep working and other formats are 400s naming ffmpeg. The set-up installs Debian's ffmpeg when run as root.",
        },
      },
      {
        key: 'ffmpeg_timeout_ms',
        file: true,
        flag: {
          name: '--ffmpeg-timeout-ms',
          value: 'integer',
          arg: '<ms>',
          help: ['stop an ffmpeg decode or encode running longer, 0 = no limit', '(default 120000)'],
        },
        default: 120_000,
        rule: { kind: 'count' },
        doc: {
          type: 'integer',
          allowed: '>= 0, `0` = no limit',
          meaning: 'An ffmpeg decode or encode running longer is killed and the request answered 503.',
        },
      },
      {
        key: 'ffmpeg_decode_stall_ms',
        file: true,
        flag: {
          name: '--ffmpeg-decode-stall-ms',
          value: 'integer',
          arg: '<ms>',
          help: ['stop an ffmpeg decode that makes no audio for this long, 0 = no limit', '(default 10000)'],
        },
        default: 10_000,
        rule: { kind: 'count' },
        doc: {
          type: 'integer',
          allowed: '>= 0, `0` = no limit',
          meaning:
            'An ffmpeg decode that writes no decoded audio for this long (at its start or later) is killed and the request answered 400: an input that makes no audio gives its child back long before `ffmpeg_timeout_ms`. Real audio decodes within milliseconds.',
        },
      },
      {
        key: 'default_speech_format',
        file: true,
        flag: {
          name: '--default-speech-format',
          value: 'text',
          arg: '<f>',
          help: [
            'speech format when a request names none: wav|pcm|mp3|opus|aac|flac',
            '(default wav; mp3 answers as the OpenAI API does)',
          ],
        },
        default: 'wav',
        rule: { kind: 'oneOf', values: SPEECH_FORMATS },
        doc: {
          type: 'string',
          allowed: '`wav`, `pcm`, `mp3`, `opus`, `aac`, `flac`',
          meaning:
            'The `/v1/audio/speech` format when a request names none. `wav` keeps audio.cpp clients as they are; `mp3` answers as the OpenAI API does.',
        },
      },
    ],
  },
  {
    heading: 'Paths (relative to the current directory):',
    settings: [
      {
        key: 'file_roots',
        file: true,
        flag: {
          name: '--file-roots',
          value: 'text',
          arg: '<dir,...>',
          help: [
            'folders requests may name server files in (default: the config',
            "file's folder and --voice-dir; none without a config)",
          ],
          note: 'Comma-separated; relative to the cwd; each must exist. Replaces the default roots.',
        },
        rule: { kind: 'bespoke' },
        doc: {
          type: 'array of folders',
          default: "the config file's folder and `voice_dir`; none without `--config`",
          allowed: "existing folders, relative to the config file's folder",
          meaning:
            'The only folders under which a request may name a server-local file (`audio`, `voice_ref`, path options), compared after symlinks are resolved. Anything else is a 403 that names the roots. `[]` turns server paths off.',
        },
      },
      {
        key: 'model_spec_override',
        file: true,
        flag: {
          name: '--model-spec-override',
          value: 'text',
          arg: '<path>',
          help: ['model spec JSON file or folder of <family>.json'],
          note: 'Relative to the cwd.',
        },
        rule: { kind: 'bespoke' },
        doc: {
          type: 'string',
          allowed: 'non-empty path',
          meaning: 'Resolved and kept; engines do not read model specs yet (logged as a notice).',
        },
      },
      {
        key: 'voice_dir',
        file: true,
        flag: {
          name: '--voice-dir',
          value: 'text',
          arg: '<dir>',
          help: ['voice library folder of *.wav files'],
          note: 'Relative to the cwd; must exist.',
        },
        rule: { kind: 'bespoke' },
        doc: {
          type: 'string',
          allowed: 'an existing folder',
          meaning:
            'Voice library: `<name>.wav` files plus an optional `prompt_text` file of `name\\|transcript` lines.',
        },
      },
      {
        key: 'models_root',
        file: true,
        flag: {
          name: '--models-root',
          value: 'text',
          arg: '<dir>',
          help: [
            'installed model packages (default: $VOXD_DATA_DIR/models, else',
            '~/.local/share/voxd/models; created at startup)',
          ],
          note: 'Relative to the cwd; made when missing.',
        },
        rule: { kind: 'bespoke' },
        doc: {
          type: 'string',
          default:
            '`$VOXD_DATA_DIR/models`, else `$XDG_DATA_HOME/voxd/models`, else `~/.local/share/voxd/models`',
          allowed: "a folder, relative to the config file's folder",
          meaning:
            'Where installed model packages live; made at startup (a root that cannot be made stops startup with exit 2). Changeable at run time with `POST /v1/ui/models-root` (api.md).',
        },
      },
      {
        key: 'tls_cert_file',
        file: true,
        flag: {
          name: '--tls-cert',
          value: 'text',
          arg: '<file>',
          help: ['serve HTTPS with this PEM certificate chain (with --tls-key)'],
        },
        rule: { kind: 'bespoke' },
        doc: {
          type: 'string',
          allowed: 'a readable PEM file; both or neither',
          meaning:
            'Serve HTTPS instead of HTTP with this certificate chain and private key (read at startup). The HTTPS listener takes the same routes, limits, streams and shutdown as the plain one.',
        },
      },
      {
        key: 'tls_key_file',
        file: true,
        flag: {
          name: '--tls-key',
          value: 'text',
          arg: '<file>',
          help: ['the PEM private key of --tls-cert'],
        },
        rule: { kind: 'bespoke' },
        doc: {
          type: 'string',
          allowed: 'a readable PEM file; both or neither',
          meaning: "The private key of `tls_cert_file`'s certificate (read at startup).",
        },
      },
    ],
  },
  {
    heading: 'Model installer (docs/models.md):',
    settings: [
      {
        key: 'max_download_bytes',
        file: true,
        flag: {
          name: '--max-download-bytes',
          value: 'integer',
          arg: '<n>',
          help: [
            'largest file one package download may bring, 0 = no limit',
            '(default 17179869184, 16 GiB)',
          ],
        },
        default: 16 * 1024 ** 3,
        rule: { kind: 'count' },
        doc: {
          type: 'integer',
          default: '`17179869184` (16 GiB)',
          allowed: '>= 0, `0` = no limit',
          meaning:
            'Largest file one install download may bring: a larger declared size is refused before a byte is written, and a body without Content-Length is cut (its `.part` deleted) once it passes this or the free space found when it started. The job fails with `E_PACKAGE_TOO_LARGE`.',
        },
      },
      {
        key: 'max_package_bytes',
        file: true,
        flag: {
          name: '--max-package-bytes',
          value: 'integer',
          arg: '<n>',
          help: [
            'most bytes one package archive may expand to, 0 = no limit',
            '(default 34359738368, 32 GiB)',
          ],
        },
        default: 32 * 1024 ** 3,
        rule: { kind: 'count' },
        doc: {
          type: 'integer',
          default: '`34359738368` (32 GiB)',
          allowed: '>= 0, `0` = no limit',
          meaning:
            'Most bytes one package archive may expand to, summed from its listing before anything is extracted (the free space of the models root is checked the same way); an archive of more than 20,000 entries is refused too. The job fails with `E_PACKAGE_TOO_LARGE` (or `E_INSUFFICIENT_STORAGE`) and nothing is left behind.',
        },
      },
      {
        key: 'installer_allow_private_hosts',
        file: true,
        flag: {
          name: '--installer-allow-private-hosts',
          value: 'switch',
          help: ['let installs download from loopback, link-local and private', 'addresses (default off)'],
          note: 'Can only turn it on.',
        },
        default: false,
        rule: { kind: 'boolean' },
        doc: {
          type: 'boolean',
          allowed: '',
          meaning:
            'Lets install downloads target loopback, link-local, private, shared and reserved addresses (by IP in the URL, by name once resolved, on every redirect). Off: such a URL is a 400, and a name or redirect leading there fails the job. The origins of `VOXD_GITHUB_BASE_URL` and `VOXD_HF_BASE_URL` (operator-set mirrors) are always allowed; their redirects elsewhere are checked. See [models.md](models.md#download-targets).',
        },
      },
    ],
  },
  {
    heading: 'Frontends (not supported by voxd; any non-empty value is an error):',
    settings: [
      {
        key: 'frontend_listener',
        file: true,
        flag: {
          name: '--frontend-listener',
          value: 'text',
          arg: '<name>',
          help: ['frontend listener name (default "")'],
          note: 'Any non-empty value is an error.',
        },
        default: '',
        rule: { kind: 'bespoke' },
        doc: {
          type: 'string',
          allowed: 'only `""`',
          meaning: 'voxd has no frontend listeners; any other value is an error.',
        },
      },
      {
        key: 'frontend_options',
        file: true,
        flag: {
          name: '--frontend-option',
          value: 'pair',
          arg: 'key=value',
          help: ['frontend option, repeatable; needs --frontend-listener'],
          note: 'Repeatable; always an error (needs a listener, and voxd has none).',
        },
        default: {},
        rule: { kind: 'bespoke' },
        doc: {
          type: 'object',
          allowed: 'option map',
          meaning: 'Accepted; a non-empty map is ignored with a notice.',
        },
      },
    ],
  },
  {
    heading: 'Security (docs/configuration.md#api-keys):',
    settings: [
      {
        key: 'api_keys',
        file: true,
        default: [],
        rule: { kind: 'bespoke' },
        doc: {
          type: 'array',
          allowed: '`{"key": "...", "scope": "inference" \\| "admin"}` objects',
          meaning: 'API keys; see [API keys](#api-keys).',
        },
      },
      {
        key: 'api_keys_file',
        file: true,
        flag: {
          name: '--api-keys-file',
          value: 'text',
          arg: '<file>',
          help: [
            'API keys, one "KEY SCOPE" a line (scope inference or admin); they',
            "merge with server.json's api_keys and $VOXD_API_KEYS",
          ],
          note: 'Relative to the cwd. See [API keys](#api-keys).',
        },
        rule: { kind: 'bespoke' },
        doc: {
          type: 'string',
          allowed: "a readable file, relative to the config file's folder",
          meaning: 'More keys, one `KEY SCOPE` a line (see [API keys](#api-keys)).',
        },
      },
      {
        key: 'open_endpoints',
        file: true,
        rule: { kind: 'bespoke' },
        doc: {
          type: 'array',
          default: '`["/health", "/ready", "/metrics"]`',
          allowed: 'paths among those three',
          meaning: 'Answered without a key when keys are set; `[]` closes them too.',
        },
      },
      {
        key: 'insecure',
        file: true,
        flag: {
          name: '--insecure',
          value: 'switch',
          help: ['serve without keys on a non-loopback host (refused otherwise)'],
          note: 'Can only turn it on.',
        },
        default: false,
        rule: { kind: 'boolean' },
        doc: {
          type: 'boolean',
          allowed: '',
          meaning: 'Serve without keys on a host other than loopback (see [API keys](#api-keys)).',
        },
      },
      {
        key: 'enable_fixture',
        file: false,
        flag: {
          name: '--enable-fixture',
          value: 'switch',
          help: ['serve the fixture test engine (also VOXD_ENABLE_FIXTURE=1)'],
          note: 'Flag only (or `VOXD_ENABLE_FIXTURE=1`). Serves the `fixture` test engine, off otherwise ([fixture-engine.md](fixture-engine.md)).',
        },
        default: false,
        rule: { kind: 'bespoke' },
      },
    ],
  },
  {
    heading: 'Logging:',
    settings: [
      {
        key: 'log',
        file: false,
        flag: {
          name: '--log',
          value: 'switch',
          help: ['log requests to stderr (default off)'],
          note: 'Flag only. Logs one line per request at `info` (without it request lines are `debug`), with `msg` `POST /v1/tasks/run 200 50.6 ms` and the fields of [observability.md](observability.md#logs). A client that left is 499 and says when: `POST /v1/tasks/run 499 12.0 ms: client closed the connection while sending the request body` (or `while waiting for the response`, `while receiving the response`); a body whose chunked framing broke says `malformed request (HPE_...)` with the status sent. A client leaving is never logged as a fault (no stack trace), with or without `--log`; engine and internal faults are logged with their stack either way.',
        },
        default: false,
        rule: { kind: 'bespoke' },
      },
      {
        key: 'log_file',
        file: false,
        flag: {
          name: '--log-file',
          value: 'path',
          arg: '<path>',
          help: ['write the log to this file instead of stderr'],
          note: 'Flag only. Relative to the cwd. All log lines (notices, request lines, errors) then go to this file, as JSON lines, instead of stderr.',
        },
        rule: { kind: 'bespoke' },
      },
      {
        key: 'log_level',
        file: true,
        flag: {
          name: '--log-level',
          value: 'text',
          arg: '<level>',
          help: ['trace, debug, info, warn, error, fatal or silent (default info)'],
        },
        default: 'info',
        rule: { kind: 'oneOf', values: LOG_LEVELS },
        doc: {
          type: 'string',
          allowed: '`trace`, `debug`, `info`, `warn`, `error`, `fatal`, `silent`',
          meaning:
            'The least severe log line written (`--log-level`). Request lines are `info` with `--log`, else `debug`; faults are `error`. See [observability.md](observability.md#logs).',
        },
      },
      {
        key: 'log_request_body',
        file: true,
        default: false,
        rule: { kind: 'bespoke' },
        doc: {
          type: 'boolean',
          allowed: '',
          meaning:
            'With `--log`, also log each JSON request body (never audio uploads, never any header); without `--log` a notice says it has no effect.',
        },
      },
    ],
  },
  {
    heading: 'Models:',
    settings: [
      {
        key: 'models',
        file: true,
        rule: { kind: 'bespoke' },
        doc: {
          type: 'array',
          default: '',
          allowed: 'model objects',
          meaning: 'Required and non-empty, unless `ui_management` is true (then it may be absent or `[]`).',
        },
      },
      {
        key: 'model_aliases',
        file: true,
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
        rule: { kind: 'bespoke' },
        doc: {
          type: 'object',
          default:
            '`whisper-1`, `gpt-4o-transcribe`, `gpt-4o-mini-transcribe` → `pocketsphinx`; `tts-1`, `tts-1-hd`, `gpt-4o-mini-tts` → `flite`',
          allowed: '`"name": "model id"` pairs; `null` removes a default name',
          meaning:
            'Other names a request may give in `model`; they add to and override the defaults. A model id always wins over an alias (see [Model aliases](#model-aliases)).',
        },
      },
      {
        key: 'lazy_load',
        file: true,
        rule: { kind: 'boolean' },
        doc: {
          type: 'boolean',
          default: '`false` with a config file, `true` without',
          allowed: '',
          meaning: "Default for each model's `lazy`.",
        },
      },
    ],
  },
  {
    heading: '',
    settings: [
      {
        file: false,
        flag: {
          name: '--version',
          value: 'switch',
          to: 'version',
          help: ['print the version and exit'],
          note: 'Prints `voxd 0.1.0`.',
        },
      },
      {
        file: false,
        flag: {
          name: '--help',
          value: 'switch',
          to: 'help',
          aliases: ['-h'],
          help: ['print this help and exit'],
          note: 'Prints the flag list.',
        },
      },
    ],
  },
];

export const SETTINGS: readonly Setting[] = SETTING_GROUPS.flatMap((group) => group.settings);

const BY_KEY = new Map(SETTINGS.filter((s) => s.key !== undefined).map((s) => [s.key!, s]));

/** The setting of a key; a name the table lacks is a programming error. */
export function setting(key: string): Setting {
  const found = BY_KEY.get(key);
  if (found === undefined) throw new Error(`no setting named ${key}`);
  return found;
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
    case 'bespoke':
      throw new Error(`${key} has a bespoke rule; its own code checks it`);
  }
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
