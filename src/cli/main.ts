#!/usr/bin/env node
/** The `voxd` command. `voxd serve` starts the server; flags alone mean `serve`, as audiocpp_server takes them. */
import { readFileSync } from 'node:fs';
import { startVoxd, type Voxd } from '../app.js';
import { ConfigError } from '../config/errors.js';
import { loadServerConfig } from '../config/server-config.js';
import { createEngineCatalog, parallelScope } from '../engines/catalog.js';
import { endRunnerProcesses, killRunnerProcesses } from '../engines/engine-worker.js';
import { killFestivalProcesses } from '../engines/festival/festival-process.js';
import { VoxdError } from '../errors.js';
import { createLogger, type LogOutput } from '../observability/logger.js';
import { RUNNER_EXIT_MS, SHUTDOWN_MARGIN_MS } from '../runtime/shutdown-timing.js';
import { hardExit } from '../util/hard-exit.js';
import { parseServeArgs, SERVE_HELP } from './args.js';
import { type CommandName, isCommand, renderUsage } from './commands.js';
import { runModels } from './models.js';
import { runOneShot } from './one-shot.js';

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

/** `voxd serve`'s log once it is made: a failure writes out its lines before saying why it stops. */
let serveLog: LogOutput | undefined;

async function fail(message: string, code: number): Promise<never> {
  await serveLog?.flush();
  process.stderr.write(`voxd: ${message}\n`);
  process.exit(code);
}

async function serve(argv: string[]): Promise<void> {
  const args = parseServeArgs(argv);
  if (args.help) return void process.stdout.write(SERVE_HELP);
  if (args.version) return void process.stdout.write(`voxd ${version()}\n`);
  const catalog = createEngineCatalog();
  const { config, notices } = loadServerConfig({
    configPath: args.configPath,
    overrides: args.overrides,
    knownFamilies: [...catalog.keys()],
  });
  const output = createLogger({ level: config.log_level, file: config.log_file });
  serveLog = output;
  const { logger } = output;
  const log = (message: string) => logger.info(message);
  for (const notice of notices) log(`notice: ${notice.message}`);
  if (config.parallel_jobs) log(parallelScope(catalog));

  let voxd: Voxd | undefined;
  let stopping = false;
  /** Set by exitNow: the exit is under way (the log being written), nothing else may start. */
  let exiting = false;
  /**
   * Logs `message`, writes out the log (a second at most, the event loop running on) and ends the
   * process with `code`. Every exit after startup goes through
   * here rather than process.exit(), which hangs for good when a libuv pool thread is stuck in a
   * blocking call (see src/util/hard-exit.ts): such a thread is never cancelled, even by a clean close.
   */
  const exitNow = (code: number, message: string): void => {
    if (exiting) return;
    exiting = true;
    killRunnerProcesses();
    killFestivalProcesses();
    logger.info(message);
    void output.flush().finally(() => hardExit(code));
  };
  /**
   * The last resort that bounds a shutdown: an engine stuck in native code on a thread cannot be
   * interrupted, and must not keep the process alive past its deadline.
   */
  const exitBy = (ms: number) =>
    setTimeout(
      () => exitNow(0, 'shutdown: work still running after the deadline was abandoned; exiting'),
      ms,
    ).unref();
  const stop = (signal: string) => {
    if (exiting) return;
    // During startup nothing is admitted yet: exit at once.
    if (!voxd) return exitNow(130, `${signal}: exiting now`);
    if (stopping) {
      log(`${signal} again: cancelling running requests and closing every connection`);
      voxd.abandon(`a second ${signal} skipped the wait`);
      exitBy(SHUTDOWN_MARGIN_MS);
      return;
    }
    stopping = true;
    const deadline = config.shutdown_timeout_ms;
    log(
      `${signal}: draining: queued requests refused, running ones have ${deadline > 0 ? `${deadline} ms` : 'no limit'} to finish (send ${signal} again to cancel them)`,
    );
    if (deadline > 0) exitBy(deadline + SHUTDOWN_MARGIN_MS);
    voxd.close().then(
      () =>
        // A runner killed for a cancelled request may not have exited yet, nor its temporary
        // folder been removed (that waits for its exit); the exit leaves neither behind.
        // The log's last lines ('stopped') may still be in a write: let it end, then write the rest.
        void endRunnerProcesses(RUNNER_EXIT_MS)
          .then(() => output.flush())
          .finally(() => hardExit(0)),
      (err: unknown) =>
        void output
          .flush()
          .finally(() =>
            hardExit(1, `voxd: shutdown failed: ${err instanceof Error ? err.message : String(err)}\n`),
          ),
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  voxd = await startVoxd({ config, catalog, logger });
  // A signal during startup already began the exit: no announcement, the process is ending.
  if (exiting) return;
  log(voxd.codec.describe());
  // The log's lines so far come first: whoever reads up to this line has read them too.
  await output.drained();
  // Announce only once the handlers are in place: a supervisor may send SIGTERM as soon as it reads this.
  process.stderr.write(`voxd listening on ${voxd.url}\n`);
  if (voxd.wyoming) {
    const { host, port } = voxd.wyoming;
    process.stderr.write(`voxd wyoming on tcp://${host.includes(':') ? `[${host}]` : host}:${port}\n`);
  }
}

/** What runs each command of the help's list (src/cli/commands.ts); nothing else is dispatched. */
const RUN: Record<CommandName, (argv: string[]) => Promise<unknown>> = {
  serve,
  speak: (argv) => runOneShot('speak', argv),
  transcribe: (argv) => runOneShot('transcribe', argv),
  diarize: (argv) => runOneShot('diarize', argv),
  vad: (argv) => runOneShot('vad', argv),
  models: runModels,
};

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === '--version') return void process.stdout.write(`voxd ${version()}\n`);
  if (command === undefined || command === '-h' || command === '--help' || command === 'help') {
    return void process.stdout.write(renderUsage());
  }
  if (isCommand(command)) return void (await RUN[command](rest));
  if (command.startsWith('-')) return serve(argv);
  await fail(`unknown command "${command}"; run voxd --help`, 2);
}

main(process.argv.slice(2)).catch((err: unknown) => {
  // A registration the runtime refuses at startup (a task the family does not serve, a preset WAV
  // that does not decode, slots above the engine's capacity) is a config error too.
  if (err instanceof ConfigError || (err instanceof VoxdError && err.code === 'E_INVALID_REQUEST'))
    return fail(err.message, 2);
  return fail(err instanceof Error ? err.message : String(err), 1);
});
