/**
 * The server's log: pino JSON lines (one object a line, `time`, `level` as a name, `msg`), to a
 * file, to stderr, or to a caller's sink; readable lines instead when stderr is a terminal. Lines
 * for a file or a non-terminal stderr are batched: they wait in memory until 4 KiB have gathered
 * or the event loop's turn ends, and are written asynchronously, a batch a write. An exit writes
 * out what is left (flush, drained) without blocking the event loop; a model's and a request's lines come from child loggers
 * (modelLogger, requestLogger) that carry their id.
 */
import { type DestinationStream, type Logger, pino } from 'pino';
import type { LogLevel } from './log-levels.js';

export type { LogLevel } from './log-levels.js';
export type { Logger };

export interface LoggerOptions {
  level: LogLevel;
  /** Append to this file rather than writing to stderr. */
  file?: string;
  /** Write lines here instead (tests); wins over `file`. */
  sink?: DestinationStream;
}

export interface LogOutput {
  logger: Logger;
  /**
   * Writes out every line logged so far, for an exit (hardExit ends the process without the exit
   * handlers that would write them otherwise): waits up to `ms` for the writes in progress, as
   * drained() does, then writes what is left synchronously. Never blocks the event loop while it
   * waits; resolves once the lines are out (or cannot be).
   */
  flush(ms?: number): Promise<void>;
  /**
   * Resolves once every line logged so far has been written, or after `ms` (a stalled write): for
   * an exit that can wait, before flush(), and before a line written to stderr around the logger.
   */
  drained(ms?: number): Promise<void>;
}

/** Lines wait in memory until this many bytes have gathered, or the event loop's turn ends. */
const BATCH_BYTES = 4096;

/** How long drained() and flush() wait by default for the writes in progress. */
const DRAIN_MS = 1000;

/** How many times an exit's flush retries a write that would block (100 ms apart) before giving up. */
const FLUSH_RETRIES = 10;

/**
 * Bytes handed to the destination and bytes it has written (what is left is buffered or being
 * written), and the waits for the two to meet.
 */
class WriteProgress {
  given = 0;
  written = 0;
  /** The destination failed: nothing more will be written, so no one waits for it. */
  broken = false;
  readonly #waiters = new Set<() => void>();

  get settled(): boolean {
    return this.broken || this.written >= this.given;
  }

  wrote(bytes: number): void {
    this.written += bytes;
    if (this.written >= this.given) this.#wake();
  }

  fail(): void {
    this.broken = true;
    this.#wake();
  }

  /** Resolves once every byte given so far is written (or the destination broke), or after `ms`. */
  until(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      if (this.settled) return resolve();
      const target = this.given;
      const timer = setTimeout(done, ms).unref();
      const waiters = this.#waiters;
      function done() {
        clearTimeout(timer);
        waiters.delete(check);
        resolve();
      }
      const check = () => {
        if (this.broken || this.written >= target) done();
      };
      waiters.add(check);
    });
  }

  #wake(): void {
    for (const wake of this.#waiters) wake();
  }
}

/**
 * pino's asynchronous destination (sonic-boom, `sync: false`) for a file or a descriptor, with its
 * batches bounded in time too: sonic-boom alone writes only once `minLength` bytes are buffered, so
 * a quiet server's last lines would wait for the next 4 KiB. Each turn that logs schedules a
 * flush() at its end. sonic-boom's `periodicFlush` would bound them too, but by a timer that
 * writes an empty buffer every period while the server is quiet (19 writes a second at 50 ms,
 * measured), where the end of a turn costs nothing while nothing is logged.
 */
function batchedDestination(
  dest: string | number,
  onError: (err: Error) => void,
): Omit<LogOutput, 'logger'> & { stream: DestinationStream } {
  let flushing = false;
  let retries = 0;
  const boom = pino.destination({
    dest,
    append: true,
    sync: false,
    minLength: BATCH_BYTES,
    // A reader that stops reading must not hold an exit for good; otherwise writes wait for it.
    retryEAGAIN: () => !flushing || ++retries <= FLUSH_RETRIES,
  });
  const progress = new WriteProgress();
  const kick = endOfTurn(boom, progress, onError);
  const stream: DestinationStream = {
    write(line: string) {
      progress.given += Buffer.byteLength(line);
      boom.write(line);
      kick.schedule();
    },
  };
  const drained = (ms = DRAIN_MS) => {
    const settled = progress.until(ms);
    kick.now();
    return settled;
  };
  const flush = async (ms = DRAIN_MS) => {
    // A batch being written asynchronously waits for a libuv pool thread: an exit before that
    // thread runs loses it, and flushSync would write the lines after it first (reproduced under
    // CPU load with flushSync alone: 1 run in 45 lost or reordered lines). sonic-boom's public API
    // cannot tell whether a write is in flight, but its 'write' events tell when every byte given
    // is written: wait for that (the event loop runs on), then write what a stalled write left.
    await drained(ms);
    if (progress.settled) return;
    flushing = true;
    retries = 0;
    try {
      boom.flushSync();
      // flushSync tells no 'write' events; what it wrote is written.
      progress.written = progress.given;
    } catch {
      // Not open yet, already broken, or a reader that stays full: nothing more can be saved.
    } finally {
      flushing = false;
    }
  };
  return { stream, flush, drained };
}

/**
 * The flush at the end of each turn that logs: scheduled at the first line of a turn, again when
 * a write ends with lines left (flush() does nothing while a write is in flight) and once a
 * file's lines logged before it opened can be written.
 */
function endOfTurn(
  boom: ReturnType<typeof pino.destination>,
  progress: WriteProgress,
  onError: (err: Error) => void,
): { schedule(): void; now(): void } {
  let scheduled = false;
  const now = () => {
    scheduled = false;
    if (!progress.broken && progress.given > progress.written) boom.flush();
  };
  const schedule = () => {
    if (scheduled || progress.broken) return;
    scheduled = true;
    setImmediate(now).unref();
  };
  boom.on('write', (n: number) => progress.wrote(n));
  boom.on('drain', () => {
    if (progress.given > progress.written) schedule();
  });
  boom.on('ready', schedule);
  boom.on('error', (err: Error) => {
    progress.fail();
    onError(err);
  });
  return { schedule, now };
}

export function createLogger(options: LoggerOptions): LogOutput {
  let output: Omit<LogOutput, 'logger'> = { flush: async () => {}, drained: async () => {} };
  let destination: DestinationStream;
  if (options.sink) destination = options.sink;
  else if (options.file) {
    const file = batchedDestination(options.file, (err) =>
      process.stderr.write(`voxd: log file ${options.file}: ${err.message}\n`),
    );
    destination = file.stream;
    output = file;
  } else if (process.stderr.isTTY) {
    // A person reads these as they come: one line a write, pretty-printed.
    destination = { write: (line: string) => process.stderr.write(readable(line)) };
  } else {
    // stderr closed under voxd (EPIPE and the like): there is nowhere left to say so.
    const stderr = batchedDestination(2, () => {});
    destination = stderr.stream;
    output = stderr;
  }
  const logger = pino(
    {
      level: options.level,
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
  return { logger, ...output };
}

/** The log of one model: every line carries `model` (its id), as docs/observability.md names it. */
export function modelLogger(logger: Logger, id: string): Logger {
  return logger.child({ model: id });
}

/** The log of one request: every line carries `req_id`, the id of its X-Request-Id header. */
export function requestLogger(logger: Logger, reqId: string): Logger {
  return logger.child({ req_id: reqId });
}

const SHOWN_FIRST = new Set(['time', 'level', 'msg']);

/**
 * One JSON line as a person reads it: `12:00:01.234 INFO  msg key=value ...`, an error's stack on
 * the lines below. Only for a terminal, so parsing each line again costs nothing that matters.
 */
export function readable(line: string): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  const time = typeof record['time'] === 'string' ? record['time'].slice(11, 23) : '';
  const level = String(record['level'] ?? '')
    .toUpperCase()
    .padEnd(5);
  let out = `${time} ${level} ${String(record['msg'] ?? '')}`;
  let stack = '';
  for (const [key, value] of Object.entries(record)) {
    if (SHOWN_FIRST.has(key) || value === undefined) continue;
    if (key === 'err' && value && typeof value === 'object' && 'stack' in value) {
      stack = `\n${String((value as { stack: unknown }).stack)}`;
      continue;
    }
    out += ` ${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`;
  }
  return `${out}${stack}\n`;
}
