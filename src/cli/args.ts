/**
 * Command-line flags of `voxd serve` (audio.cpp server flags, reference §3.4). This only parses;
 * ranges and paths are checked by loadServerConfig so a flag and its config key share one rule.
 */
import { ConfigError } from '../config/errors.js';
import type { CliOverrides } from '../config/server-config.js';

export interface ServeArgs {
  configPath?: string;
  overrides: CliOverrides;
  help: boolean;
  version: boolean;
}

export const SERVE_HELP = `Usage: voxd serve [--config <file>] [options]

Config:
  --config <file>               server.json; without it voxd serves its embedded models
                                (relative paths inside it resolve against its folder)

Bind:
  --host <ip>                   address to listen on (default 127.0.0.1)
  --port <n>                    port, 0 picks a free one (default 8080)

UI and management:
  --ui                          serve the web UI (default on)
  --no-ui                       do not serve the web UI
  --ui-management               enable model management routes (default off)
  --cors-origins <"" | "*">     CORS: "" off or "*" any origin (default "")

Backend (accepted for audio.cpp compatibility; voxd engines run on the CPU):
  --backend <name>              cpu|cuda|hip|rocm|vulkan|metal (default cpu)
  --device <n>                  device index (default 0)
  --threads <n>                 compute threads per session, > 0 (default 1)

Timeouts and residency:
  --busy-timeout-ms <ms>        max wait for a busy model, 0 = unbounded (default 300000)
  --max-queued-requests <n>     requests that may wait per model, 0 = unbounded (default 0)
  --ready-when-saturated        /ready answers 503 while every loaded model's queue is full
  --max-loaded-models <n>       LRU limit on resident models, 0 = no limit (default 0)
  --idle-unload-ms <ms>         unload idle models after this long, 0 = off (default 0)
  --shutdown-timeout-ms <ms>    on SIGTERM/SIGINT, how long running requests may finish before they
                                are cancelled, 0 = no limit (default 30000)
  --max-inference-ms <ms>       cancel (504) a request running longer, 0 = off (default 0)
  --min-free-memory-mb <mb>     refuse loads below this free memory, 0 = off (default 0)
  --parallel-jobs               experimental parallel runtime; enables per-model slots (default off)

Request limits:
  --max-request-body-bytes <n>  largest request body (default 268435456, 256 MiB)
  --body-timeout-ms <ms>        answer 408 when a body sends nothing for this long, 0 = off
                                (default 30000; live routes keep their live_ingest limits)
  --max-audio-seconds <s>       longest input audio, 0 = no limit (default 10800)
  --max-input-chars <n>         longest speech input text, 0 = no limit (default 100000)

Audio formats:
  --ffmpeg-path <path>          the ffmpeg binary for formats other than WAV/PCM (default ffmpeg)
  --ffmpeg-timeout-ms <ms>      stop an ffmpeg decode or encode running longer, 0 = no limit
                                (default 120000)
  --default-speech-format <f>   speech format when a request names none: wav|pcm|mp3|opus|aac|flac
                                (default wav; mp3 answers as the OpenAI API does)

Paths (relative to the current directory):
  --file-roots <dir,...>        folders requests may name server files in (default: the config
                                file's folder and --voice-dir; none without a config)
  --model-spec-override <path>  model spec JSON file or folder of <family>.json
  --voice-dir <dir>             voice library folder of *.wav files
  --models-root <dir>           installed model packages (default: $VOXD_DATA_DIR/models, else
                                ~/.local/share/voxd/models; created at startup)
  --tls-cert <file>             serve HTTPS with this PEM certificate chain (with --tls-key)
  --tls-key <file>              the PEM private key of --tls-cert

Frontends (not supported by voxd; any non-empty value is an error):
  --frontend-listener <name>    frontend listener name (default "")
  --frontend-option key=value   frontend option, repeatable; needs --frontend-listener

Security (docs/configuration.md#api-keys):
  --api-keys-file <file>        API keys, one "KEY SCOPE" a line (scope inference or admin); they
                                merge with server.json's api_keys and $VOXD_API_KEYS
  --insecure                    serve without keys on a non-loopback host (refused otherwise)
  --enable-fixture              serve the fixture test engine (also VOXD_ENABLE_FIXTURE=1)

Logging:
  --log                         log requests to stderr (default off)
  --log-file <path>             write the log to this file instead of stderr
  --log-level <level>           trace, debug, info, warn, error, fatal or silent (default info)

  --version                     print the version and exit
  -h, --help                    print this help and exit

Every flag also takes the --flag=value form. Flags override the config file.
`;

type ValueFlag = (out: ServeArgs, value: string, flag: string) => void;

/** The override keys that hold numbers, and those that hold plain strings. */
type KeysOf<T> = {
  [K in keyof CliOverrides]-?: NonNullable<CliOverrides[K]> extends T ? K : never;
}[keyof CliOverrides];

const integer =
  (name: KeysOf<number>): ValueFlag =>
  (out, value, flag) => {
    out.overrides[name] = parseInteger(value, flag);
  };

const text =
  (name: KeysOf<string>): ValueFlag =>
  (out, value) => {
    out.overrides[name] = value;
  };

/** The flags of `voxd serve` (--help and docs/configuration.md list them; a test keeps them equal). */
export const serveFlags = (): string[] => [...SWITCHES.keys(), ...VALUE_FLAGS.keys()];

const VALUE_FLAGS = new Map<string, ValueFlag>(
  Object.entries({
    '--config': (out, value, flag) => {
      out.configPath = nonEmpty(value, flag);
    },
    '--host': text('host'),
    '--port': integer('port'),
    '--busy-timeout-ms': integer('busy_timeout_ms'),
    '--max-queued-requests': integer('max_queued_requests'),
    '--max-loaded-models': integer('max_loaded_models'),
    '--idle-unload-ms': integer('idle_unload_ms'),
    '--shutdown-timeout-ms': integer('shutdown_timeout_ms'),
    '--max-inference-ms': integer('max_inference_ms'),
    '--min-free-memory-mb': integer('min_free_memory_mb'),
    '--max-request-body-bytes': integer('max_request_body_bytes'),
    '--body-timeout-ms': integer('body_timeout_ms'),
    '--max-audio-seconds': integer('max_audio_seconds'),
    '--max-input-chars': integer('max_input_chars'),
    '--file-roots': text('file_roots'),
    '--ffmpeg-path': text('ffmpeg_path'),
    '--ffmpeg-timeout-ms': integer('ffmpeg_timeout_ms'),
    '--default-speech-format': text('default_speech_format'),
    '--cors-origins': text('cors_origins'),
    '--log-file': (out, value, flag) => {
      out.overrides.log_file = nonEmpty(value, flag);
    },
    '--log-level': text('log_level'),
    '--backend': text('backend'),
    '--device': integer('device'),
    '--threads': integer('threads'),
    '--voice-dir': text('voice_dir'),
    '--models-root': text('models_root'),
    '--tls-cert': text('tls_cert_file'),
    '--tls-key': text('tls_key_file'),
    '--model-spec-override': text('model_spec_override'),
    '--frontend-listener': text('frontend_listener'),
    '--api-keys-file': text('api_keys_file'),
    '--frontend-option': (out, value, flag) => {
      const eq = value.indexOf('=');
      if (eq <= 0) throw ConfigError.invalid(flag, value, 'key=value with a non-empty key');
      // A computed key defines an own property, so "__proto__=x" stays an ordinary option.
      out.overrides.frontend_options = {
        ...out.overrides.frontend_options,
        [value.slice(0, eq)]: value.slice(eq + 1),
      };
    },
  }),
);

const SWITCHES = new Map<string, (out: ServeArgs) => void>(
  Object.entries({
    '--ui': (out) => {
      out.overrides.ui = true;
    },
    '--no-ui': (out) => {
      out.overrides.ui = false;
    },
    '--ui-management': (out) => {
      out.overrides.ui_management = true;
    },
    '--ready-when-saturated': (out) => {
      out.overrides.ready_when_saturated = true;
    },
    '--insecure': (out) => {
      out.overrides.insecure = true;
    },
    '--enable-fixture': (out) => {
      out.overrides.enable_fixture = true;
    },
    '--parallel-jobs': (out) => {
      out.overrides.parallel_jobs = true;
    },
    '--log': (out) => {
      out.overrides.log = true;
    },
    '--version': (out) => {
      out.version = true;
    },
    '--help': (out) => {
      out.help = true;
    },
    '-h': (out) => {
      out.help = true;
    },
  }),
);

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
