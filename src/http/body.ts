/** Reading request bodies within max_request_body_bytes and body_timeout_ms, and parsing JSON bodies. */
import type { IncomingMessage } from 'node:http';
import { isPlainObject } from '../config/errors.js';
import { invalidRequest, showValue, VoxdError } from '../errors.js';
import { memoryRelease } from '../util/release-memory.js';
import { parseJsonText } from './json-text.js';

function tooLarge(limit: number): VoxdError {
  return new VoxdError('E_BODY_TOO_LARGE', `request body exceeds max_request_body_bytes=${limit}`);
}

/** Rejects at once when Content-Length already says the body is too large. */
export function checkDeclaredLength(req: IncomingMessage, limit: number): void {
  const declared = req.headers['content-length'];
  if (declared === undefined) return;
  if (!/^\d+$/.test(declared))
    throw invalidRequest(`Content-Length: ${showValue(declared)} is not a decimal number`);
  if (Number(declared) > limit) throw tooLarge(limit);
}

export interface BodyIdleTimer {
  /** A chunk arrived: the wait for the next one starts over. */
  touch(): void;
  /** The body is read, or its read failed: the timer is cleared for good. */
  stop(): void;
}

/**
 * The body_timeout_ms rule, for any reader of a whole request body: when `ms` pass without a
 * chunk (the reader calls `touch` on each), `onIdle` gets the 408 error to fail the read with.
 * Without it, a client that sends headers and half a body holds its connection and its handler
 * forever. The server answers the error with `Connection: close`, which drops the rest of the body.
 * `ms` 0 is no limit. The live routes do not use this: their bodies are bounded by live_ingest.
 */
export function bodyIdleTimer(ms: number, onIdle: (err: VoxdError) => void): BodyIdleTimer {
  if (ms <= 0) return { touch() {}, stop() {} };
  const timer = setTimeout(() => {
    onIdle(
      new VoxdError(
        'E_BODY_TIMEOUT',
        `request body: no data arrived for ${ms} ms (body_timeout_ms=${ms}); send the body without pauses, or raise body_timeout_ms (0 = no limit)`,
      ),
    );
  }, ms);
  return { touch: () => timer.refresh(), stop: () => clearTimeout(timer) };
}

/**
 * The whole body, within `limit` bytes and the idle timeout. Read through 'data' events rather than
 * the stream's async iterator, which costs a promise race and several listeners per chunk. A read
 * that fails (too large, stalled) pauses the request and leaves it be: destroying it would close
 * the socket before the error response is written. A request cut off fails the read with the
 * stream's error (ECONNRESET "aborted"), or ERR_STREAM_PREMATURE_CLOSE, as the iterator would.
 */
export function readBody(req: IncomingMessage, limit: number, idleMs: number): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    checkDeclaredLength(req, limit);
    if (req.destroyed) {
      reject(req.errored ?? prematureClose());
      return;
    }
    const parts: Buffer[] = [];
    let size = 0;
    const fail = (err: unknown) => {
      stop();
      req.pause();
      reject(err);
    };
    const timer = bodyIdleTimer(idleMs, fail);
    const onData = (chunk: Buffer) => {
      timer.touch();
      size += chunk.length;
      if (size > limit) fail(tooLarge(limit));
      else parts.push(chunk);
    };
    const onEnd = () => {
      stop();
      // The bytes, then the text and what JSON.parse makes of it: all garbage once the request is over.
      memoryRelease.noteLargeBuffer(3 * size);
      resolve(parts.length === 1 ? parts[0]! : Buffer.concat(parts, size));
    };
    const onError = (err: Error) => {
      stop();
      reject(err);
    };
    const onClose = () => {
      stop();
      reject(prematureClose());
    };
    function stop(): void {
      timer.stop();
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    }
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

/** The error a stream's reader gets when it closes before its end, as node's own readers name it. */
function prematureClose(): Error {
  return Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' });
}

export interface JsonBodySource {
  req: IncomingMessage;
  config: {
    max_request_body_bytes: number;
    body_timeout_ms: number;
    log: boolean;
    log_request_body: boolean;
  };
  log(message: string): void;
}

/**
 * A JSON object body; anything else is a 400 that says what was wrong. With `--log` and
 * log_request_body the body is logged (JSON bodies only: audio uploads never are).
 */
export async function readJsonObject({ req, config, log }: JsonBodySource): Promise<Record<string, unknown>> {
  const raw = await readBody(req, config.max_request_body_bytes, config.body_timeout_ms);
  if (config.log && config.log_request_body) log(`${req.method} ${req.url} body: ${raw.toString('utf8')}`);
  if (raw.length === 0) throw invalidRequest('request body is empty; expected a JSON object');
  const parsed = parseJsonText(raw.toString('utf8'));
  if (!isPlainObject(parsed)) {
    throw invalidRequest(
      `request body must be a JSON object, got ${Array.isArray(parsed) ? 'an array' : parsed === null ? 'null' : typeof parsed}`,
    );
  }
  return parsed;
}
