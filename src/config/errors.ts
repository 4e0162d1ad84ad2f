/**
 * ConfigError and the small typed checks that raise it. Every config problem, whether it comes from
 * server.json, a CLI flag or a dynamic registration body, is reported the same way: one line that
 * names the key path, shows the offending value and says what is allowed.
 */
import { cutText, InputError, showValue } from '../errors.js';

export class ConfigError extends InputError {
  /** The key path (`models[1].busy_timeout_ms`) or the CLI flag (`--port`) that was wrong. */
  readonly key: string;
  readonly value: unknown;

  constructor(key: string, value: unknown, message: string, options?: { cause?: unknown }) {
    // Callers print these on one line (stderr at startup, an HTTP error body at registration).
    super(message.replace(/\s*[\r\n]+\s*/g, ' '), options);
    this.name = 'ConfigError';
    this.key = key;
    this.value = value;
  }

  /** A registration body's key path is its field; a CLI flag (`--port`) never reaches a client and is no field. */
  override get param(): string | undefined {
    return /^[A-Za-z_]/.test(this.key) ? this.key : undefined;
  }

  /** `key: value is invalid; expected ...` */
  static invalid(key: string, value: unknown, expected: string): ConfigError {
    return new ConfigError(key, value, `${key}: ${showValue(value)} is invalid; expected ${expected}`);
  }

  /** `key: value is invalid; <reason>` for problems that are not a type or range mismatch. */
  static rejected(key: string, value: unknown, reason: string): ConfigError {
    return new ConfigError(key, value, `${key}: ${showValue(value)} is invalid; ${reason}`);
  }

  static missing(key: string, expected: string): ConfigError {
    return new ConfigError(key, undefined, `${key} is missing; expected ${expected}`);
  }
}

export function isConfigError(err: unknown): err is ConfigError {
  return err instanceof ConfigError;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * Joins a key path. User-chosen names (preset names, option keys) may hold any character, so
 * anything that is not a plain identifier is quoted to keep the path unambiguous and on one line;
 * a long name is cut, as values are (a path is echoed in error messages).
 */
export function keyPath(parent: string, child: string | number): string {
  if (typeof child === 'number') return `${parent}[${child}]`;
  const name = /^[A-Za-z_][A-Za-z0-9_]*$/.test(child) ? cutText(child) : showValue(child);
  if (!parent) return name;
  return name.startsWith('"') ? `${parent}[${name}]` : `${parent}.${name}`;
}

export function expectString(value: unknown, key: string, opts: { nonEmpty?: boolean } = {}): string {
  if (typeof value !== 'string' || (opts.nonEmpty && value.length === 0)) {
    throw ConfigError.invalid(key, value, opts.nonEmpty ? 'a non-empty string' : 'a string');
  }
  return value;
}

export function expectBoolean(value: unknown, key: string): boolean {
  if (typeof value !== 'boolean') throw ConfigError.invalid(key, value, 'true or false');
  return value;
}

/**
 * Integers only: `1.5`, `"2"` and `true` are type errors, not values to coerce. The default upper bound
 * is 2^53-1 because larger JSON numbers cannot be told apart from their neighbours.
 */
export function expectInteger(
  value: unknown,
  key: string,
  range: { min: number; max?: number; expected?: string },
): number {
  const max = range.max ?? Number.MAX_SAFE_INTEGER;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < range.min || value > max) {
    const expected =
      range.expected ??
      (range.max === undefined
        ? `an integer >= ${range.min}`
        : `an integer between ${range.min} and ${range.max}`);
    throw ConfigError.invalid(key, value, expected);
  }
  return value;
}

export function expectOneOf<T extends string>(value: unknown, key: string, allowed: readonly T[]): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw ConfigError.invalid(key, value, `one of: ${allowed.join(', ')}`);
  }
  return value as T;
}
