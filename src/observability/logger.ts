/**
 * The server's log: pino JSON lines (one object a line, `time`, `level` as a name, `msg`), to a
 * file, to stderr, or to a caller's sink; readable lines instead when stderr is a terminal.
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
  /** Writes out what is buffered, synchronously: for an exit that cannot wait. */
  flush(): void;
}

export function createLogger(options: LoggerOptions): LogOutput {
  let flush = () => {};
  let destination: DestinationStream;
  if (options.sink) destination = options.sink;
  else if (options.file) {
    // Asynchronous appends keep file I/O off the event loop; an exit flushes what is left.
    const file = pino.destination({ dest: options.file, append: true, sync: false });
    file.on('error', (err: Error) =>
      process.stderr.write(`voxd: log file ${options.file}: ${err.message}\n`),
    );
    flush = () => {
      try {
        file.flushSync();
      } catch {
        // Not open yet or already broken: nothing can be saved.
      }
    };
    destination = file;
  } else if (process.stderr.isTTY)
    destination = { write: (line: string) => process.stderr.write(readable(line)) };
  else destination = { write: (line: string) => process.stderr.write(line) };
  const logger = pino(
    {
      level: options.level,
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
  return { logger, flush };
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
