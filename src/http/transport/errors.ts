/**
 * The one place that turns errors into HTTP: a status and the error body
 * `{"error":{"message","type","param","code"}}`. `message` and `type` are what audio.cpp clients read;
 * `param` and `code` complete the OpenAI shape. Unknown errors are internal faults: logged in full,
 * answered with a generic 500 so internals do not leak.
 */
import { WavError } from '../../audio/wav-decode.js';
import { ConfigError } from '../../config/errors.js';
import { cutText, ERROR_CODES, type ErrorCode, VoxdError } from '../../errors.js';

/**
 * The longest error message a client is sent. Messages cut each value they echo (showValue), and
 * this cap is the safety net for one that does not: no request can make voxd echo megabytes.
 */
export const MAX_ERROR_MESSAGE_CHARS = 1000;

export interface ErrorObject {
  message: string;
  type: string;
  /** The request field at fault (`seed`, `options.speed`, `requests[0].input`), else null. */
  param: string | null;
  /** The catalogue's machine-readable code (`invalid_request`, `model_not_found`, `server_busy`, ...). */
  code: string;
}

export interface HttpError {
  status: number;
  body: { error: ErrorObject };
  /** True when the cause is a fault in voxd or an engine rather than in the request. */
  internal: boolean;
  /** Extra response headers (Retry-After on a full queue). */
  headers?: Record<string, string>;
}

/** A field path: `seed`, `options.x`, `requests[0].input`, `file[1]`. */
const FIELD = String.raw`[A-Za-z_][A-Za-z0-9_]*(?:\[\d+\])*(?:\.[A-Za-z_][A-Za-z0-9_]*(?:\[\d+\])*)*`;
/** `seed: ...` or `'file' is required...`: voxd's messages name the field first. */
const LEADING_FIELD = new RegExp(`^(?:(${FIELD}): |'(${FIELD})' is required)`);

/**
 * `error.param`: the field the error names, else null. An error that knows its field says so
 * (VoxdError's `param`, ConfigError's `key`); otherwise a client error (4xx) whose message begins
 * with a field path and `: ` (`seed: number out of range`), or with `'name' is required`, names that
 * field. Server-side errors (5xx) never have one: their prefixes are contexts, not fields.
 */
export function paramOf(code: ErrorCode, message: string, known?: string): string | null {
  if (known !== undefined) return known;
  if (ERROR_CODES[code].status >= 500) return null;
  const match = LEADING_FIELD.exec(message);
  return match ? (match[1] ?? match[2] ?? null) : null;
}

function errorObject(code: ErrorCode, message: string, param?: string): ErrorObject {
  const { type, apiCode } = ERROR_CODES[code];
  return {
    message: cutText(message, MAX_ERROR_MESSAGE_CHARS),
    type,
    param: paramOf(code, message, param),
    code: apiCode,
  };
}

/** A 401 names its scheme (RFC 9110); a full queue says when to come back. */
function headersOf(err: VoxdError): { headers: Record<string, string> } | undefined {
  if (err.status === 401) return { headers: { 'WWW-Authenticate': 'Bearer' } };
  if (err.retryAfterS !== undefined) return { headers: { 'Retry-After': String(err.retryAfterS) } };
  return undefined;
}

export function toHttp(err: unknown): HttpError {
  if (err instanceof VoxdError) {
    return {
      status: err.status,
      body: { error: errorObject(err.code, err.message, err.param) },
      // Refusals (busy, residency, memory, shutdown) are expected; only faults are logged in full.
      internal: err.code === 'E_ENGINE' || err.code === 'E_INTERNAL',
      ...(headersOf(err) ?? {}),
    };
  }
  // Both come from validating what the client sent (a registration body, an uploaded WAV).
  if (err instanceof ConfigError || err instanceof WavError) {
    // A registration's key path is the field (a CLI flag never reaches HTTP, but is no field).
    const key = err instanceof ConfigError && /^[A-Za-z_]/.test(err.key) ? err.key : undefined;
    return {
      status: ERROR_CODES.E_INVALID_REQUEST.status,
      body: { error: errorObject('E_INVALID_REQUEST', err.message, key) },
      internal: false,
    };
  }
  const { status, type, apiCode } = ERROR_CODES.E_INTERNAL;
  return {
    status,
    body: { error: { message: 'internal server error', type, param: null, code: apiCode } },
    internal: true,
  };
}
