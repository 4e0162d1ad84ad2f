/**
 * The commands of `voxd`, in the order `voxd --help` lists them. main.ts dispatches through a
 * handler table keyed by these names (the compiler refuses a name without a handler, or a handler
 * without a name) and the help is written from this list, so a command cannot exist unlisted.
 */
import { MODELS_COMMANDS } from './models-args.js';

export interface CommandSpec {
  name: string;
  /** What follows `voxd ` in the help's first column. */
  usage: string;
  summary: string;
}

export const COMMANDS = [
  { name: 'serve', usage: 'serve [options]', summary: 'start the HTTP server' },
  { name: 'speak', usage: 'speak ["text"] [options]', summary: 'speak a text into an audio file or stdout' },
  {
    name: 'transcribe',
    usage: 'transcribe <file|-> [opts]',
    summary: 'print the text spoken in an audio file',
  },
  {
    name: 'diarize',
    usage: 'diarize <file|-> [options]',
    summary: 'print who speaks when (start end speaker)',
  },
  { name: 'vad', usage: 'vad <file|-> [options]', summary: 'print where the speech is (start end)' },
  {
    name: 'models',
    usage: `models ${MODELS_COMMANDS.join('|')}`,
    summary: 'the installed model packages: list, describe, download, remove',
  },
] as const satisfies readonly CommandSpec[];

export type CommandName = (typeof COMMANDS)[number]['name'];

export const isCommand = (word: string): word is CommandName => COMMANDS.some((c) => c.name === word);

/** The help's first column is this wide, as in the commands' own help texts. */
const USAGE_COLUMN = 28;

const commandLines = () =>
  COMMANDS.map((c) => `  ${c.usage.padEnd(USAGE_COLUMN - 2)}  ${c.summary}`).join('\n');

/** `voxd --help`. */
export function renderUsage(): string {
  return `Usage: voxd <command> [options]

Commands:
${commandLines()}

Run \`voxd <command> --help\` for a command's flags. speak, transcribe, diarize and vad run in
this process with the embedded models (no server needed), or on a server with --url. models
works on the models root (where \`voxd models pull <id>\` installs packages).

Options:
  --version                   print the version and exit
  -h, --help                  print this help and exit

Exit status: 0 success, 1 failure (engine, server, file), 2 bad usage, 130 interrupted.
`;
}
