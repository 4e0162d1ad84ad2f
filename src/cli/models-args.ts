/**
 * Flags of `voxd models list|info|pull|rm`, the `ollama list|show|pull|rm` habit on the models
 * root. This only parses; whether a package, a URL or the root is there is found out when the
 * command runs.
 */
import { UsageError } from './one-shot-args.js';

export const MODELS_COMMANDS = ['list', 'info', 'pull', 'rm'] as const;
export type ModelsCommand = (typeof MODELS_COMMANDS)[number];

export interface ModelsArgs {
  /** undefined: `voxd models --help` (or no subcommand with --help). */
  command: ModelsCommand | undefined;
  help: boolean;
  /** info, pull, rm: the package id (pull: or the URL of an archive). */
  target?: string;
  configPath?: string;
  modelsRoot?: string;
  json: boolean;
  /** pull of a URL: the package id and the family that must recognise it. */
  id?: string;
  family?: string;
}

const EXIT_CODES = `Exit status:
  0   success
  1   failure: an unknown or missing package, a failed download or install
  2   bad usage: an unknown flag, a missing argument or value
`;

const ROOT = `Where:
  --models-root <dir>       the folder of installed packages (default: the config's models_root,
                            else $VOXD_DATA_DIR/models)
  --config <file>           a server config (server.json) whose models_root is used
`;

export const MODELS_USAGE = `Usage: voxd models <command> [options]

Commands:
  list                        the packages installed in the models root
  info <id>                   a catalogue package or an installed one
  pull <id | url>             download and install a catalogue package or an archive
  rm <id>                     remove an installed package

Run \`voxd models <command> --help\` for a command's flags. An installed package is used by its
id, as any configured model: \`voxd transcribe talk.wav -m <id>\`, or "model": "<id>" in a request.

${ROOT}
${EXIT_CODES}`;

const HELP: Record<ModelsCommand, string> = {
  list: `Usage: voxd models list [options]

Prints the packages installed in the models root: id, family, task, size and install date.

Options:
  --json                    print a JSON array instead of the table
  -h, --help                print this help and exit

${ROOT}
${EXIT_CODES}`,
  info: `Usage: voxd models info <id> [options]

Describes a package: a catalogue one (family, task, description, licence, homepage, download
size when known, whether it is installed), or an installed one (its manifest).

Options:
  --json                    print JSON instead of "key: value" lines
  -h, --help                print this help and exit

${ROOT}
${EXIT_CODES}`,
  pull: `Usage: voxd models pull <catalogue id | url> [options]

Downloads and installs a package into the models root, then prints its folder. A URL names an
archive (.tar.bz2, .tar.gz, .zip) or a single model file; the package id is then the file's name
without its extension, and the family is detected from the files. A progress bar shows on stderr
when it is a terminal. Ctrl-C stops the download and keeps what came (run the same pull again to
resume) and exits 130.

Options:
  --id <id>                 with a URL: the package id (A-Z a-z 0-9 _ -)
  --family <family>         with a URL: the family that must recognise the model
  -h, --help                print this help and exit

${ROOT}
Examples:
  voxd models pull whisper-base.en
  voxd models pull https://example.com/models/my-model.tar.bz2 --id my-model

${EXIT_CODES}  130 interrupted (Ctrl-C)
`,
  rm: `Usage: voxd models rm <id> [options]

Removes an installed package (and its partial downloads) from the models root.

Options:
  -h, --help                print this help and exit

${ROOT}
${EXIT_CODES}`,
};

export function modelsHelp(command: ModelsCommand | undefined): string {
  return command === undefined ? MODELS_USAGE : HELP[command];
}

type Apply = (out: ModelsArgs, value: string) => void;

const ROOT_FLAGS: Record<string, Apply> = {
  '--models-root': (out, value) => {
    out.modelsRoot = value;
  },
  '--config': (out, value) => {
    out.configPath = value;
  },
};

const FLAGS: Record<ModelsCommand, Record<string, Apply>> = {
  list: ROOT_FLAGS,
  info: ROOT_FLAGS,
  pull: {
    ...ROOT_FLAGS,
    '--id': (out, value) => {
      out.id = value;
    },
    '--family': (out, value) => {
      out.family = value;
    },
  },
  rm: ROOT_FLAGS,
};

const SWITCHES: Record<ModelsCommand, readonly string[]> = {
  list: ['--json'],
  info: ['--json'],
  pull: [],
  rm: [],
};

/** Whether a pull names a URL rather than a catalogue id. */
export const isUrl = (target: string) => /^[a-z][a-z0-9+.-]*:\/\//i.test(target);

/**
 * Parses the arguments after `voxd models`. Throws UsageError on anything it does not know;
 * `--help` wins over every other problem, as in the one-shot commands.
 */
export function parseModelsArgs(argv: readonly string[]): ModelsArgs {
  const [first, ...rest] = argv;
  const help = argv.includes('-h') || argv.includes('--help');
  if (first === undefined || first === '-h' || first === '--help' || first === 'help') {
    if (first === undefined)
      throw new UsageError('models: name a command (list, info, pull, rm); run voxd models --help');
    return { command: undefined, help: true, json: false };
  }
  if (!(MODELS_COMMANDS as readonly string[]).includes(first))
    throw new UsageError(`models: unknown command "${first}"; run voxd models --help`);
  const command = first as ModelsCommand;
  const out: ModelsArgs = { command, help: false, json: false };
  if (help) return { ...out, help: true };
  const flags = FLAGS[command];
  const positional: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    if (!arg.startsWith('-')) {
      positional.push(arg);
      continue;
    }
    if (arg === '--') {
      positional.push(...rest.slice(i + 1));
      break;
    }
    if (SWITCHES[command].includes(arg)) {
      out.json = true;
      continue;
    }
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    const apply = flags[flag];
    if (!apply)
      throw new UsageError(`models ${command}: unknown flag ${flag}; run voxd models ${command} --help`);
    let value = eq > 0 ? arg.slice(eq + 1) : undefined;
    if (value === undefined) {
      const next = rest[i + 1];
      if (next === undefined || next.startsWith('-'))
        throw new UsageError(`${flag} needs a value; run voxd models ${command} --help`);
      value = next;
      i++;
    }
    apply(out, value);
  }
  if (command === 'list') {
    if (positional.length > 0) throw new UsageError(`models list: takes no argument, got "${positional[0]}"`);
    return out;
  }
  if (positional.length !== 1)
    throw new UsageError(
      positional.length === 0
        ? `models ${command}: name the package${command === 'pull' ? ' (a catalogue id or a URL)' : ''}; run voxd models ${command} --help`
        : `models ${command}: one package at a time, got ${positional.length} arguments`,
    );
  out.target = positional[0];
  if (command === 'pull' && !isUrl(out.target!) && (out.id !== undefined || out.family !== undefined))
    throw new UsageError(
      'models pull: --id and --family go with a URL; a catalogue package has its own id and family',
    );
  return out;
}
