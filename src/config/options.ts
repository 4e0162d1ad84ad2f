/**
 * Option objects (`load_options`, `session_options`, `default_request_options`, `frontend_options`)
 * cross every interface as flat string maps, exactly as audio.cpp flattens them (reference §3.3), so
 * engines parse one representation whatever JSON type the user wrote.
 */
import { ConfigError, isPlainObject, keyPath } from './errors.js';
import type { OptionMap } from './types.js';

const TWO_POW_53 = 2 ** 53;

/**
 * Turns one option value into its string form; `undefined` means "skip this key" (null or absent).
 * Integral numbers print without a decimal point (`4`, not `4.0`) because engines parse them as
 * integers; beyond 2^53 the digits are no longer exact, so the JSON text is used instead.
 */
export function stringifyOption(value: unknown): string | undefined {
  if (value === null || value === undefined) return undefined;
  switch (typeof value) {
    case 'string':
      return value;
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`option value ${value} has no JSON form`);
      if (Number.isInteger(value) && Math.abs(value) < TWO_POW_53) return value.toFixed(0);
      return JSON.stringify(value);
    case 'object':
      return JSON.stringify(value);
    default:
      throw new TypeError(`option value of type ${typeof value} has no JSON form`);
  }
}

/** Validates that `raw` is a plain object and flattens it; null values are dropped. */
export function toOptionMap(raw: unknown, key: string): OptionMap {
  if (!isPlainObject(raw)) throw ConfigError.invalid(key, raw, 'an object of option values');
  const entries: [string, string][] = [];
  for (const [name, value] of Object.entries(raw)) {
    // JSON cannot hold these, but a programmatic caller could; say which key instead of a TypeError.
    if (typeof value === 'number' && !Number.isFinite(value)) {
      throw ConfigError.invalid(keyPath(key, name), value, 'a finite number');
    }
    if (typeof value === 'bigint' || typeof value === 'function' || typeof value === 'symbol') {
      throw ConfigError.invalid(keyPath(key, name), String(value), 'a JSON value');
    }
    const text = stringifyOption(value);
    if (text !== undefined) entries.push([name, text]);
  }
  // fromEntries defines own properties, so a key named "__proto__" stays an ordinary option.
  return Object.fromEntries(entries);
}
