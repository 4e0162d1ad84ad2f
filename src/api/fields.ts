/** Reading fields of a request body, form or query; every failure is a 400 naming the field and value. */
import { invalidField, showValue } from '../errors.js';

export type Fields = Record<string, unknown>;

export function requireString(body: Fields, key: string): string {
  const value = body[key];
  if (value === undefined || value === null)
    throw invalidField(key, `'${key}' is required: expected a non-empty string`);
  if (typeof value !== 'string' || value.length === 0) {
    throw invalidField(key, `${key}: ${showValue(value)} is invalid; expected a non-empty string`);
  }
  return value;
}

export function optionalString(body: Fields, key: string): string | undefined {
  const value = body[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string')
    throw invalidField(key, `${key}: ${showValue(value)} is invalid; expected a string`);
  return value;
}

/** busy_timeout_ms from JSON (a number) or from a form field or query parameter (digits). */
export function optionalBusyTimeout(body: Fields, key = 'busy_timeout_ms'): number | undefined {
  const value = body[key];
  if (value === undefined || value === null) return undefined;
  const number = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isSafeInteger(number) || number < 0) {
    throw invalidField(
      key,
      `${key}: ${showValue(value)} is invalid; expected an integer >= 0 (0 waits without limit)`,
    );
  }
  return number;
}

/** A boolean from JSON, or one of true/True/1/false/False/0 from a form field. */
export function optionalBool(body: Fields, key: string): boolean | undefined {
  const value = body[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'boolean') return value;
  if (value === 'true' || value === 'True' || value === '1') return true;
  if (value === 'false' || value === 'False' || value === '0') return false;
  throw invalidField(key, `${key}: ${showValue(value)} is invalid; expected true or false`);
}

/** One of a closed set of strings. */
export function optionalEnum<T extends string>(
  body: Fields,
  key: string,
  allowed: readonly T[],
): T | undefined {
  const value = body[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw invalidField(key, `${key}: ${showValue(value)} is invalid; expected one of: ${allowed.join(', ')}`);
  }
  return value as T;
}

/**
 * Where a query parameter comes from: a route's context. Its request target, when there is one,
 * tells without parsing that there is no query, so a request without one never builds its URL
 * (the server's context makes `url` on first use; parsing one costs microseconds per request).
 */
export interface QuerySource {
  readonly url: URL;
  readonly req?: { readonly url?: string | undefined };
}

export function queryParam(source: QuerySource, name: string): string | null {
  const target = source.req?.url;
  if (target !== undefined && !target.includes('?')) return null;
  return source.url.searchParams.get(name);
}

/** busy_timeout_ms from the body or form, else from the query string. */
export function requestBusyTimeout(body: Fields, source: QuerySource): number | undefined {
  const fromBody = optionalBusyTimeout(body);
  if (fromBody !== undefined) return fromBody;
  const query = queryParam(source, 'busy_timeout_ms');
  return query === null ? undefined : optionalBusyTimeout({ busy_timeout_ms: query });
}
