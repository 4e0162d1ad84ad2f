/**
 * The one-shot commands: `voxd speak`, `voxd transcribe`, `voxd diarize` and `voxd vad`. Each runs
 * one request in this process (or on a server with --url), writes the result and nothing else to
 * stdout (or to -o), and ends: 0 done, 1 failed, 2 bad usage, 130 on Ctrl-C. Messages go to stderr
 * as one line `voxd: <message>`; a progress line shows there only for long inputs, and only when
 * stderr is a terminal.
 */
import { open, writeFile } from 'node:fs/promises';
import { ConfigError } from '../config/errors.js';
import { killRunnerProcesses } from '../engines/engine-worker.js';
import { hardExit } from '../util/hard-exit.js';
import type { AudioInput, Backend, ProgressSink, SpanKind, TimedSpan } from './backend.js';
import { InProcessBackend } from './in-process.js';
import {
  type OneShotArgs,
  type OneShotCommand,
  oneShotHelp,
  parseOneShotArgs,
  speakFormat,
  type TranscribeFormat,
  UsageError,
} from './one-shot-args.js';
import { RemoteBackend } from './remote.js';

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;
export const EXIT_INTERRUPTED = 130;

/** A progress line on stderr, redrawn in place; nothing at all when stderr is not a terminal. */
class Progress implements ProgressSink {
  readonly #enabled: boolean;
  #timer: NodeJS.Timeout | undefined;
  #label = '';
  #since = 0;

  constructor(enabled: boolean) {
    this.#enabled = enabled;
  }

  start(label: string): void {
    if (!this.#enabled || this.#timer) return;
    this.#label = label;
    this.#since = performance.now();
    this.#draw();
    this.#timer = setInterval(() => this.#draw(), 250);
  }

  #draw(): void {
    const seconds = Math.floor((performance.now() - this.#since) / 1000);
    process.stderr.write(`\r\x1b[Kvoxd: ${this.#label}... ${seconds} s`);
  }

  /** Clears the line, so what follows on stderr starts clean. */
  stop(): void {
    if (!this.#timer) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
    process.stderr.write('\r\x1b[K');
  }
}

async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Writes to stdout and resolves once the bytes are handed to the OS (before the process ends). */
function writeStdout(data: Buffer | string): Promise<void> {
  return new Promise((resolve, reject) => {
    process.stdout.write(data, (err) => {
      if (!err) return resolve();
      const closed = (err as NodeJS.ErrnoException).code === 'EPIPE';
      reject(
        closed ? new Error('stdout: the reader closed the pipe before the whole result was written') : err,
      );
    });
  });
}

/** The audio file named on the command line, or stdin's bytes for "-"; a missing file fails (1). */
async function openInput(name: string): Promise<{ input: AudioInput; close: () => Promise<void> }> {
  if (name === '-') {
    const bytes = await readStdin();
    if (bytes.length === 0) throw new Error('stdin: no audio came in');
    return { input: { name: 'stdin', source: { bytes } }, close: async () => {} };
  }
  let file: Awaited<ReturnType<typeof open>>;
  try {
    file = await open(name, 'r');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (err as Error).message;
    throw new Error(`${name}: ${why}`);
  }
  const stat = await file.stat();
  if (!stat.isFile()) {
    await file.close();
    throw new Error(`${name}: not a regular file`);
  }
  if (stat.size === 0) {
    await file.close();
    throw new Error(`${name}: the file is empty`);
  }
  return { input: { name, source: { file, size: stat.size } }, close: () => file.close() };
}

/** Runs `use` on the input named on the command line, and closes it after, whatever `use` did. */
async function withInput(name: string, use: (input: AudioInput) => Promise<void>): Promise<void> {
  const { input, close } = await openInput(name);
  try {
    await use(input);
  } finally {
    await close();
  }
}

function spanLines(spans: readonly TimedSpan[]): string {
  return spans
    .map(
      (s) => `${s.start.toFixed(3)} ${s.end.toFixed(3)}${s.speaker === undefined ? '' : ` ${s.speaker}`}\n`,
    )
    .join('');
}

/** Text formats end with a newline on a terminal or in a file, as every Unix tool's output does. */
function withNewline(text: string): string {
  return text.endsWith('\n') ? text : `${text}\n`;
}

async function speak(args: OneShotArgs, backend: () => Promise<Backend>, progress: Progress): Promise<void> {
  const format = speakFormat(args);
  const output = args.output ?? (process.stdout.isTTY ? undefined : '-');
  if (output === undefined)
    throw new UsageError('speak: stdout is a terminal; name an output file with -o FILE, or pipe the output');
  const text = (
    args.input === undefined || args.input === '-' ? (await readStdin()).toString('utf8') : args.input
  ).trim();
  if (text === '') throw new UsageError('speak: no text to speak (give it as an argument or on stdin)');
  const job = { text, model: args.model, voice: args.voice, speed: args.speed, format };
  const audio = await (await backend()).speak(job, progress);
  progress.stop();
  if (output === '-') await writeStdout(audio);
  else await writeFile(output, audio);
}

async function transcribe(
  args: OneShotArgs,
  backend: () => Promise<Backend>,
  progress: Progress,
): Promise<void> {
  const job = {
    model: args.model,
    language: args.language,
    format: (args.format ?? 'text') as TranscribeFormat,
  };
  await withInput(args.input!, async (input) => {
    const text = await (await backend()).transcribe(input, job, progress);
    progress.stop();
    await writeStdout(withNewline(text));
  });
}

async function spans(
  kind: SpanKind,
  args: OneShotArgs,
  backend: () => Promise<Backend>,
  progress: Progress,
): Promise<void> {
  await withInput(args.input!, async (input) => {
    const found = await (await backend()).spans(kind, input, args.model, progress);
    progress.stop();
    const key = kind === 'diar' ? 'turns' : 'segments';
    await writeStdout(args.format === 'json' ? `${JSON.stringify({ [key]: found })}\n` : spanLines(found));
  });
}

/** One line, whatever the error: what a script greps and a person reads. */
function messageOf(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.replace(/\s*\n\s*/g, ' ').trim();
}

function exitCodeOf(err: unknown): number {
  return err instanceof UsageError || err instanceof ConfigError ? EXIT_USAGE : EXIT_FAILURE;
}

/**
 * Runs one command and ends the process. The backend is made only once the arguments and the input
 * are known to be good, so a usage error costs no engine start; it is always closed (the runtime's
 * engines unloaded, runner processes ended) before the exit.
 */
export async function runOneShot(command: OneShotCommand, argv: readonly string[]): Promise<never> {
  let made: Backend | undefined;
  const progress = new Progress(process.stderr.isTTY === true);
  const interrupt = (code: number) => {
    progress.stop();
    made?.kill();
    // Also the runners of a backend still being made, which `made` does not hold yet.
    killRunnerProcesses();
    hardExit(code);
  };
  // A write error is reported through writeStdout's callback; unheard, the event would crash.
  process.stdout.on('error', () => {});
  process.on('SIGINT', () => interrupt(EXIT_INTERRUPTED));
  process.on('SIGTERM', () => interrupt(143));

  let code = EXIT_OK;
  let message: string | undefined;
  try {
    const args = parseOneShotArgs(command, argv);
    if (args.help) {
      await writeStdout(oneShotHelp(command));
      return hardExit(EXIT_OK);
    }
    const log = args.log ? (line: string) => process.stderr.write(`[voxd] ${line}\n`) : undefined;
    const backend = async (): Promise<Backend> => {
      made ??= args.url
        ? new RemoteBackend(args.url, args.apiKey ?? (process.env['VOXD_API_KEY'] || undefined))
        : await InProcessBackend.open({ configPath: args.configPath, modelsRoot: args.modelsRoot, log });
      return made;
    };
    if (command === 'speak') await speak(args, backend, progress);
    else if (command === 'transcribe') await transcribe(args, backend, progress);
    else await spans(command === 'diarize' ? 'diar' : 'vad', args, backend, progress);
  } catch (err) {
    code = exitCodeOf(err);
    message = messageOf(err);
  }
  progress.stop();
  try {
    await made?.close();
  } catch (err) {
    if (code === EXIT_OK) {
      code = EXIT_FAILURE;
      message = `closing: ${messageOf(err)}`;
    }
  }
  // hardExit: a libuv thread stuck in a native call must not keep a finished command alive.
  return hardExit(code, message === undefined ? undefined : `voxd: ${message}\n`);
}
