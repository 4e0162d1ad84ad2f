/**
 * Flags of the one-shot commands `voxd speak`, `voxd transcribe`, `voxd diarize` and `voxd vad`
 * (the audiocpp_cli and `ollama run` habit: one command, one result on stdout). This only parses;
 * whether a model, a file or a server is there is found out when the command runs.
 */

/** Bad usage: an unknown flag, a missing value or argument. The command exits with 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export const ONE_SHOT_COMMANDS = ['speak', 'transcribe', 'diarize', 'vad'] as const;
export type OneShotCommand = (typeof ONE_SHOT_COMMANDS)[number];

/** The formats `speak` writes, told by the output file's extension or by --format. */
export const SPEAK_FORMATS = ['wav', 'pcm', 'mp3', 'opus', 'aac', 'flac'] as const;
export type SpeakFormat = (typeof SPEAK_FORMATS)[number];
export const TRANSCRIBE_FORMATS = ['text', 'json', 'verbose_json', 'srt', 'vtt'] as const;
export type TranscribeFormat = (typeof TRANSCRIBE_FORMATS)[number];
export const SEGMENT_FORMATS = ['text', 'json'] as const;

export interface OneShotArgs {
  command: OneShotCommand;
  help: boolean;
  /** The text (speak) or the input file (`-` for stdin); undefined when none was given. */
  input?: string;
  model?: string;
  configPath?: string;
  modelsRoot?: string;
  url?: string;
  apiKey?: string;
  /** Log the runtime's messages (model loads, notices) to stderr. */
  log: boolean;
  voice?: string;
  /** speak: the output file, `-` for stdout. */
  output?: string;
  speed?: number;
  language?: string;
  /** The output format: speak's audio format, or the text format of the other commands. */
  format?: string;
}

const EXIT_CODES = `Exit status:
  0   success
  1   failure: the engine, the server, a file or a model could not do it
  2   bad usage: an unknown flag, a missing argument or value
  130 interrupted (Ctrl-C)
`;

const SOURCE = `Where it runs:
  (default)                 in this process, with the embedded models (no server needed)
  --config <file>           in this process, with the models of a server config (server.json)
  --models-root <dir>       folder of installed model packages (the config's models_root)
  --url <http://host:port>  on a running voxd (or audio.cpp) server, through its HTTP API
  --api-key <key>           sent as "Authorization: Bearer <key>" (default: $VOXD_API_KEY)
  --log                     print the runtime's log (model loads) to stderr
`;

const HELP: Record<OneShotCommand, string> = {
  speak: `Usage: voxd speak ["text" | -] [options]

Speaks the text (from stdin when no text or "-" is given) and writes the audio.

Options:
  -m, --model <id>          the speech model (default: the first tts model, espeak when embedded)
  -v, --voice <name>        a voice of the model (or a preset, or an OpenAI name such as alloy)
  -o, --output <file | ->   the audio file; "-" writes to stdout (the default when stdout is
                            not a terminal). The format comes from the extension:
                            wav, pcm (raw 16-bit little-endian), mp3, opus, aac, flac
  --format <f>              the format whatever the extension (default wav)
  --speed <x>               speaking rate, a positive number (1 = normal)
  -h, --help                print this help and exit

${SOURCE}
Examples:
  voxd speak "Hello there" -o hello.mp3
  echo "Hello" | voxd speak -m flite > hello.wav
  voxd speak "Hello" | aplay

${EXIT_CODES}`,
  transcribe: `Usage: voxd transcribe <file | -> [options]

Transcribes an audio file (WAV, or any format ffmpeg reads; "-" reads stdin) and prints the text.

Options:
  -m, --model <id>          the recognition model (default: the first asr model, pocketsphinx
                            when embedded)
  --language <xx>           the spoken language, for models that take one
  --format <f>              text (default), json, verbose_json, srt or vtt
  -h, --help                print this help and exit

${SOURCE}
Examples:
  voxd transcribe meeting.mp3
  voxd transcribe talk.wav --format srt > talk.srt

${EXIT_CODES}`,
  diarize: `Usage: voxd diarize <file | -> [options]

Finds who speaks when in an audio file ("-" reads stdin) and prints one speaker turn a line:
"start end speaker", times in seconds.

Options:
  -m, --model <id>          the diarization model (default: the first diar model, diarizer
                            when embedded)
  --format <f>              text (default) or json
  -h, --help                print this help and exit

${SOURCE}
${EXIT_CODES}`,
  vad: `Usage: voxd vad <file | -> [options]

Finds the speech in an audio file ("-" reads stdin) and prints one segment a line: "start end",
times in seconds.

Options:
  -m, --model <id>          the voice activity model (default: the first vad model, silero-vad
                            when embedded)
  --format <f>              text (default) or json
  -h, --help                print this help and exit

${SOURCE}
${EXIT_CODES}`,
};

export function oneShotHelp(command: OneShotCommand): string {
  return HELP[command];
}

type Apply = (out: OneShotArgs, value: string, flag: string) => void;

const COMMON: Record<string, Apply> = {
  '--model': (out, value) => {
    out.model = value;
  },
  '--config': (out, value) => {
    out.configPath = value;
  },
  '--models-root': (out, value) => {
    out.modelsRoot = value;
  },
  '--url': (out, value, flag) => {
    out.url = parseUrl(value, flag);
  },
  '--api-key': (out, value) => {
    out.apiKey = value;
  },
  '--format': (out, value) => {
    out.format = value;
  },
};

const PER_COMMAND: Record<OneShotCommand, Record<string, Apply>> = {
  speak: {
    '--voice': (out, value) => {
      out.voice = value;
    },
    '--output': (out, value) => {
      out.output = value;
    },
    '--speed': (out, value, flag) => {
      const speed = /^\s*(\d+\.?\d*|\.\d+)\s*$/.test(value) ? Number(value) : Number.NaN;
      if (!(speed > 0)) throw new UsageError(`${flag}: "${value}" is invalid; expected a positive number`);
      out.speed = speed;
    },
  },
  transcribe: {
    '--language': (out, value) => {
      out.language = value;
    },
  },
  diarize: {},
  vad: {},
};

const SHORT: Record<string, string> = { '-m': '--model', '-v': '--voice', '-o': '--output' };

const FORMATS: Record<OneShotCommand, readonly string[]> = {
  speak: SPEAK_FORMATS,
  transcribe: TRANSCRIBE_FORMATS,
  diarize: SEGMENT_FORMATS,
  vad: SEGMENT_FORMATS,
};

function parseUrl(value: string, flag: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`${flag}: "${value}" is not a URL; expected http://host:port`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UsageError(`${flag}: "${value}" is not an http:// or https:// URL`);
  return url.href.replace(/\/+$/, '');
}

/**
 * Parses the arguments after the command name. Throws UsageError on anything it does not know;
 * `--help` wins over every other problem, so a half-typed command can still ask for help.
 */
export function parseOneShotArgs(command: OneShotCommand, argv: readonly string[]): OneShotArgs {
  const out: OneShotArgs = { command, help: false, log: false };
  if (argv.includes('-h') || argv.includes('--help')) return { ...out, help: true };
  const flags = { ...COMMON, ...PER_COMMAND[command] };
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    // "-" alone is stdin (or stdout after -o), and after "--" everything is an argument.
    if (arg === '-' || !arg.startsWith('-')) {
      positional.push(arg);
      continue;
    }
    if (arg === '--') {
      positional.push(...argv.slice(i + 1));
      break;
    }
    if (arg === '--log') {
      out.log = true;
      continue;
    }
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const given = eq > 0 ? arg.slice(0, eq) : arg;
    const flag = SHORT[given] ?? given;
    const apply = flags[flag];
    if (!apply) throw new UsageError(`${command}: unknown flag ${given}; run voxd ${command} --help`);
    let value = eq > 0 ? arg.slice(eq + 1) : undefined;
    if (value === undefined) {
      const next = argv[i + 1];
      // "-" is a value (stdout for -o); any other dash word means the value was forgotten.
      if (next === undefined || (next.startsWith('-') && next !== '-'))
        throw new UsageError(`${given} needs a value; run voxd ${command} --help`);
      value = next;
      i++;
    }
    apply(out, value, given);
  }
  if (positional.length > 1)
    throw new UsageError(
      `${command}: one ${command === 'speak' ? 'text' : 'file'} at a time, got ${positional.length} arguments (quote a text with spaces)`,
    );
  out.input = positional[0];
  if (command !== 'speak' && out.input === undefined)
    throw new UsageError(`${command}: name the audio file, or "-" for stdin; run voxd ${command} --help`);
  if (out.format !== undefined && !FORMATS[command].includes(out.format))
    throw new UsageError(
      `--format: "${out.format}" is invalid for ${command}; expected one of: ${FORMATS[command].join(', ')}`,
    );
  if (out.url !== undefined && (out.configPath !== undefined || out.modelsRoot !== undefined))
    throw new UsageError(
      '--url runs on a server, which has its own models: leave out --config and --models-root',
    );
  return out;
}

/**
 * The audio format `speak` writes: --format, else the output file's extension, else WAV. An
 * extension that names no format is a usage error rather than a WAV file named `.mp4`.
 */
export function speakFormat(args: Pick<OneShotArgs, 'format' | 'output'>): SpeakFormat {
  if (args.format !== undefined) return args.format as SpeakFormat;
  const output = args.output;
  if (output === undefined || output === '-') return 'wav';
  const slash = output.lastIndexOf('/');
  const dot = output.lastIndexOf('.');
  if (dot <= slash + 1) return 'wav';
  const ext = output.slice(dot + 1).toLowerCase();
  if ((SPEAK_FORMATS as readonly string[]).includes(ext)) return ext as SpeakFormat;
  if (ext === 'ogg') return 'opus';
  throw new UsageError(
    `-o: cannot tell the audio format of "${output}" from its extension; use one of .${SPEAK_FORMATS.join(', .')} or --format`,
  );
}
