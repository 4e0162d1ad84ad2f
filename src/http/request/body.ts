/**
 * Reading request bodies within max_request_body_bytes (max_json_body_bytes for JSON), body_timeout_ms
 * and the request's share of the body budget (body-budget.ts), and parsing JSON bodies.
 */
import type { IncomingMessage } from 'node:http';
import { isPlainObject } from '../../config/errors.js';
import { invalidRequest, showValue, VoxdError } from '../../errors.js';
import type { RequestTrace } from '../../observability/request-trace.js';
import { type Clock, systemClock, type Timer } from '../../util/clock.js';
import { keepPlain, readJson } from '../../util/json-reader.js';
import { memoryRelease } from '../../util/release-memory.js';
import { bodyLeaseOf } from '../transport/body-budget.js';

/** The 413 for a body past `limit`, naming the setting that set it. */
export function tooLarge(limit: number, key = 'max_request_body_bytes'): VoxdError {
  return new VoxdError('E_BODY_TOO_LARGE', `request body exceeds ${key}=${limit}`);
}

/**
 * Rejects at once when Content-Length already says the body is too large; returns the declared
 * length (undefined for a chunked body).
 */
export function checkDeclaredLength(
  req: IncomingMessage,
  limit: number,
  key = 'max_request_body_bytes',
): number | undefined {
  const declared = req.headers['content-length'];
  if (declared === undefined) return undefined;
  if (!/^\d+$/.test(declared))
    throw invalidRequest(`Content-Length: ${showValue(declared)} is not a decimal number`);
  const length = Number(declared);
  if (length > limit) throw tooLarge(limit, key);
  return length;
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
export function bodyIdleTimer(
  ms: number,
  onIdle: (err: VoxdError) => void,
  clock: Clock = systemClock,
): BodyIdleTimer {
  if (ms <= 0) return { touch() {}, stop() {} };
  // A chunk only notes its time: the timer, when it fires, re-arms for what is left of the wait.
  let last = clock.now();
  let timer: Timer;
  const arm = (wait: number) => {
    timer = clock.after(wait, () => {
      const idle = clock.now() - last;
      if (idle < ms) return arm(ms - idle);
      onIdle(
        new VoxdError(
          'E_BODY_TIMEOUT',
          `request body: no data arrived for ${ms} ms (body_timeout_ms=${ms}); send the body without pauses, or raise body_timeout_ms (0 = no limit)`,
        ),
      );
    });
  };
  arm(ms);
  return {
    touch: () => {
      last = clock.now();
    },
    stop: () => timer.cancel(),
  };
}

/** Where a body reader puts each chunk, and what it makes of them all at the end. */
interface BodySink<T> {
  push(chunk: Buffer): void;
  end(size: number): T;
}

/**
 * The whole body, within `limit` bytes (`key` names the setting), the idle timeout and the request's
 * lease (the server-wide budget and the whole-body deadline, body-budget.ts), each chunk handed to
 * the sink `sinkFor` makes for the declared length (undefined for a chunked body). Read through 'data' events rather than the stream's async iterator, which costs a promise
 * race and several listeners per chunk. A declared length is taken from the budget before any byte
 * is read; a chunked body takes its bytes as they arrive. A read that fails (too large, over budget,
 * stalled, late) pauses the request and leaves it be: destroying it would close the socket before
 * the error response is written. A request cut off fails the read with the stream's error
 * (ECONNRESET "aborted"), or ERR_STREAM_PREMATURE_CLOSE, as the iterator would. What was read
 * before a failure is owed to the memory release, so a body killed for its size is given back once
 * the server is quiet rather than at whatever collection happens to run next.
 */
function readBodyInto<T>(
  req: IncomingMessage,
  limit: number,
  idleMs: number,
  key: string,
  sinkFor: (declared: number | undefined) => BodySink<T>,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const declared = checkDeclaredLength(req, limit, key);
    const sink = sinkFor(declared);
    const lease = bodyLeaseOf(req);
    const memory = lease?.memory ?? memoryRelease;
    const owe = (bytes: number) => memory.noteLargeBuffer(bytes);
    if (declared !== undefined) lease?.hold(declared);
    if (req.destroyed) {
      reject(req.errored ?? prematureClose());
      return;
    }
    let size = 0;
    const fail = (err: unknown) => {
      stop();
      req.pause();
      owe(size);
      reject(err);
    };
    const timer = bodyIdleTimer(idleMs, fail, lease?.clock);
    const deadline = lease?.watchDeadline(fail);
    const onData = (chunk: Buffer) => {
      timer.touch();
      size += chunk.length;
      if (size > limit) return fail(tooLarge(limit, key));
      if (declared === undefined) {
        try {
          lease?.hold(chunk.length);
        } catch (err) {
          return fail(err);
        }
      }
      sink.push(chunk);
    };
    const onEnd = () => {
      stop();
      // The bytes, then the text and what JSON.parse makes of it: all garbage once the request is over.
      owe(3 * size);
      resolve(sink.end(size));
    };
    const onError = (err: Error) => {
      stop();
      owe(size);
      reject(err);
    };
    const onClose = () => {
      stop();
      owe(size);
      reject(prematureClose());
    };
    function stop(): void {
      timer.stop();
      deadline?.stop();
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

/**
 * The whole body as bytes (see readBodyInto). A body of declared length is copied into its buffer
 * chunk by chunk as it arrives: joined at the end, a 32 MiB body was one copy into fresh memory that
 * held the event loop 40-80 ms. A chunked body's parts are joined at its end.
 */
export function readBody(
  req: IncomingMessage,
  limit: number,
  idleMs: number,
  key = 'max_request_body_bytes',
): Promise<Buffer> {
  return readBodyInto(req, limit, idleMs, key, (declared): BodySink<Buffer> => {
    if (declared !== undefined && declared > 64 * 1024) {
      const whole = Buffer.allocUnsafeSlow(declared);
      let at = 0;
      return {
        push: (chunk) => {
          at += chunk.copy(whole, at);
        },
        end: () => whole.subarray(0, at),
      };
    }
    const parts: Buffer[] = [];
    return {
      push: (chunk) => parts.push(chunk),
      end: (size) => (parts.length === 1 ? parts[0]! : Buffer.concat(parts, size)),
    };
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
    max_json_body_bytes: number;
    body_timeout_ms: number;
    log: boolean;
    log_request_body: boolean;
  };
  log(message: string): void;
  /** The request's trace: the moment its body was read goes on its log line. */
  trace?: RequestTrace;
}

/** The JSON limit: max_json_body_bytes, or max_request_body_bytes when that is lower. */
function jsonLimit(config: JsonBodySource['config']): { bytes: number; key: string } {
  return config.max_request_body_bytes < config.max_json_body_bytes
    ? { bytes: config.max_request_body_bytes, key: 'max_request_body_bytes' }
    : { bytes: config.max_json_body_bytes, key: 'max_json_body_bytes' };
}

function readJsonBytes({ req, config }: JsonBodySource): Promise<Buffer> {
  const { bytes, key } = jsonLimit(config);
  return readBody(req, bytes, config.body_timeout_ms, key);
}

/**
 * A JSON object body; anything else is a 400 that says what was wrong. With `--log` and
 * log_request_body the body is logged (JSON bodies only: audio uploads never are).
 */
export async function readJsonObject(source: JsonBodySource): Promise<Record<string, unknown>> {
  const { req, config, log } = source;
  const body = await readJsonBytes(source);
  if (config.log && config.log_request_body) log(`${req.method} ${req.url} body: ${body.toString('utf8')}`);
  if (body.length === 0) throw invalidRequest('request body is empty; expected a JSON object');
  // A large `audio_base64` stays the body's bytes, for the audio worker to decode (issue 27).
  const { value: parsed } = await readJson(body, { keep: keepPlain('audio_base64') });
  if (!isPlainObject(parsed)) {
    throw invalidRequest(
      `request body must be a JSON object, got ${Array.isArray(parsed) ? 'an array' : parsed === null ? 'null' : typeof parsed}`,
    );
  }
  source.trace?.bodyRead();
  return parsed;
}
