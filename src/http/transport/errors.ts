/**
 * Errors written as HTTP: the status, the error body `{"error":{"message","type","param","code"}}`
 * (src/errors.ts describeError says what they hold) and the headers a status calls for.
 */
import { describeError, type ErrorObject } from '../../errors.js';

export interface HttpError {
  status: number;
  body: { error: ErrorObject };
  /** True when the cause is a fault in voxd or an engine rather than in the request. */
  internal: boolean;
  /** Extra response headers (Retry-After on a full queue). */
  headers?: Record<string, string>;
}

/** A 401 names its scheme (RFC 9110); a full queue says when to come back. */
function headersOf(
  status: number,
  retryAfterS: number | undefined,
): { headers: Record<string, string> } | undefined {
  if (status === 401) return { headers: { 'WWW-Authenticate': 'Bearer' } };
  if (retryAfterS !== undefined) return { headers: { 'Retry-After': String(retryAfterS) } };
  return undefined;
}

export function toHttp(err: unknown): HttpError {
  const { status, error, internal, retryAfterS } = describeError(err);
  return { status, body: { error }, internal, ...(headersOf(status, retryAfterS) ?? {}) };
}
