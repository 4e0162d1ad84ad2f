/**
 * The server's log: pino JSON lines (one object a line, `time`, `level` as a name, `msg`), to a
 * file, to stderr, or to a caller's sink; readable lines instead when stderr is a terminal. Lines
 * for a file or a non-terminal stderr are batched: they wait in memory until 4 KiB have gathered
 * or the event loop's turn ends, and are written asynchronously, a batch a write. An exit writes
 * out what is left (flush, drained); a model's and a request's lines come from child loggers
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
   * Writes out what is buffered, synchronously: for an exit that cannot wait (hardExit ends the
   * process without the exit handlers that would write it otherwise). A batch already being written
   * asynchronously is left to that write; drained() waits for it.
   */
  flush(): void;
  /**
   * Resolves once every line logged so far has been written, or after `ms` (a stalled write): for
   * an exit that can wait, before flush(), and before a line written to stderr around the logger.
   */
  drained(ms?: number): Promise<void>;
}

/** Lines wait in memory until this many bytes have gathered, or the event loop's turn ends. */
const BATCH_BYTES = 4096;

/** How long drained() waits by default for the writes in progress. */
const DRAIN_MS = 1000;

/** How long an exit's flush lets a batch already being written finish first (see flush). */
const IN_FLIGHT_WAIT_MS = 20;
const PAUSE = new Int32Array(new SharedArrayBuffer(4));

/** How many times an exit's flush retries a write that would block (100 ms apart) before giving up. */
const FLUSH_RETRIES = 10;

/**
 * pino's asynchronous destination (sonic-boom, `sync: false`) for a file or a descriptor, with its
 * batches bounded in time too: sonic-boom alone writes only once `minLength` bytes are buffered, so
 * a quiet server's last lines would wait for the next 4 KiB. Each turn that logs schedules a flush.
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
  // Bytes handed to the destination and bytes it has written: what is left is buffered or in flight.
  let given = 0;
  let written = 0;
  let broken = false;
  let scheduled = false;
  const waiters = new Set<() => void>();
  const kick = () => {
    scheduled = false;
    // flush() does nothing while a write is in flight; its end ('drain') kicks again.
    if (!broken && given > written) boom.flush();
  };
  const schedule = () => {
    if (scheduled || broken) return;
    scheduled = true;
    setImmediate(kick).unref();
  };
  boom.on('write', (n: number) => {
    written += n;
    if (written >= given) for (const wake of waiters) wake();
  });
  boom.on('drain', () => {
    if (given > written) schedule();
  });
  // A file's lines logged before it opened wait for this.
  boom.on('ready', schedule);
  boom.on('error', (err: Error) => {
    broken = true;
    for (const wake of waiters) wake();
    onError(err);
  });
  const stream: DestinationStream = {
    write(line: string) {
      given += Buffer.byteLength(line);
      boom.write(line);
      schedule();
    },
  };
  const flush = () => {
    if (broken || given <= written) return;
    flushing = true;
    retries = 0;
    try {
      // A batch written asynchronously may still be on its way: its write waits for a libuv pool
      // thread, and an exit before that thread runs loses the batch, while flushSync writes the
      // lines after it (reproduced under CPU load: 3 runs in 25 of the logger test lost or
      // reordered lines). Its end cannot be seen from here (it is told on the event loop), so the
      // pool gets the CPU for a moment first; its write takes microseconds once it runs.
      if ((boom as unknown as { _writing?: boolean })._writing !== false)
        Atomics.wait(PAUSE, 0, 0, IN_FLIGHT_WAIT_MS);
      boom.flushSync();
      // flushSync tells no 'write' events; what it wrote is written (an in-flight batch counts twice, harmlessly).
      written = given;
    } catch {
      // Not open yet, already broken, or a reader that stays full: nothing more can be saved.
    } finally {
      flushing = false;
    }
  };
  const drained = (ms = DRAIN_MS) =>
    new Promise<void>((resolve) => {
      if (broken || given <= written) return resolve();
      const target = given;
      const timer = setTimeout(done, ms).unref();
      function done() {
        clearTimeout(timer);
        waiters.delete(check);
        resolve();
      }
      function check() {
        if (broken || written >= target) done();
      }
      waiters.add(check);
      kick();
    });
  return { stream, flush, drained };
}

export function createLogger(options: LoggerOptions): LogOutput {
  let output: Omit<LogOutput, 'logger'> = { flush: () => {}, drained: async () => {} };
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

/** The string-message log the runtime and the engines take: info lines on `logger`. */
export function messageLog(logger: Logger): (message: string) => void {
  return (message) => logger.info(message);
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
