/**
 * API keys and the rules that decide whether voxd may serve without them. Keys come from three
 * sources that merge: server.json's `api_keys`, a keys file (`--api-keys-file`, one `KEY SCOPE` a
 * line) and `VOXD_API_KEYS` (`key1:admin,key2:inference`). Only a SHA-256 digest of each key is
 * kept, so a key never sits in the config object that other code reads, and no error message
 * built here ever shows a key (it names where the key was, never what it was).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { ConfigError, isPlainObject, keyPath } from './errors.js';

export const API_SCOPES = ['inference', 'admin'] as const;
export type ApiScope = (typeof API_SCOPES)[number];

export interface ApiKey {
  /** SHA-256 of the key: compared in constant time, and fixed-length so length does not leak. */
  digest: Buffer;
  scope: ApiScope;
}

/** The paths `open_endpoints` may open; anything else always needs a key once keys are set. */
export const OPENABLE_PATHS = ['/health', '/ready', '/metrics'] as const;

export function keyDigest(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/** Whitespace would split a file line and `:`/`,` an environment entry; no key may hold them. */
const KEY_TEXT = /^[^\s:,]+$/;

function makeKey(key: unknown, scope: unknown, where: string): ApiKey {
  if (typeof key !== 'string' || !KEY_TEXT.test(key)) {
    throw new ConfigError(
      where,
      undefined,
      `${where}: the key is invalid; expected a non-empty string without spaces, ':' or ','`,
    );
  }
  if (!(API_SCOPES as readonly unknown[]).includes(scope)) {
    // A scope is no secret, but a line's text may be a mistyped key: show only a short scope.
    const shown = typeof scope === 'string' && scope.length <= 20 ? JSON.stringify(scope) : 'the scope';
    throw new ConfigError(where, undefined, `${where}: ${shown} is not a scope; expected inference or admin`);
  }
  return { digest: keyDigest(key), scope: scope as ApiScope };
}

/** server.json's `api_keys`: `[{"key": "...", "scope": "admin"}]`. */
export function keysFromConfig(raw: unknown): ApiKey[] {
  if (raw === undefined) return [];
  if (!Array.isArray(raw)) {
    throw new ConfigError('api_keys', undefined, 'api_keys: expected an array of {"key", "scope"} objects');
  }
  return raw.map((entry, i) => {
    const where = keyPath('api_keys', i);
    if (!isPlainObject(entry))
      throw new ConfigError(where, undefined, `${where}: expected a {"key", "scope"} object`);
    const extra = Object.keys(entry).find((name) => name !== 'key' && name !== 'scope');
    if (extra !== undefined)
      throw new ConfigError(
        where,
        undefined,
        `${where}: unknown key ${JSON.stringify(extra)}; expected key and scope`,
      );
    return makeKey(entry['key'], entry['scope'], where);
  });
}

/** A keys file: `KEY SCOPE` a line; blank lines and `#` comments are skipped. */
export function keysFromFile(file: string, flag: string): ApiKey[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new ConfigError(flag, file, `${flag}: cannot read the keys file ${file} (${code})`);
  }
  const keys: ApiKey[] = [];
  text.split(/\r?\n/).forEach((line, i) => {
    const content = line.trim();
    if (content === '' || content.startsWith('#')) return;
    const where = `${flag} ${file} line ${i + 1}`;
    const parts = content.split(/\s+/);
    if (parts.length !== 2) {
      throw new ConfigError(
        flag,
        undefined,
        `${where}: expected "KEY SCOPE" (two words), found ${parts.length}`,
      );
    }
    keys.push(makeKey(parts[0], parts[1], where));
  });
  return keys;
}

/** `VOXD_API_KEYS="key1:admin,key2:inference"`. */
export function keysFromEnv(value: string | undefined): ApiKey[] {
  if (value === undefined || value.trim() === '') return [];
  return value.split(',').map((entry, i) => {
    const where = `VOXD_API_KEYS entry ${i + 1}`;
    const colon = entry.lastIndexOf(':');
    if (colon < 0) throw new ConfigError('VOXD_API_KEYS', undefined, `${where}: expected key:scope`);
    return makeKey(entry.slice(0, colon).trim(), entry.slice(colon + 1).trim(), where);
  });
}

export function parseOpenEndpoints(raw: unknown): string[] {
  if (raw === undefined) return [...OPENABLE_PATHS];
  const list = Array.isArray(raw) ? raw : undefined;
  if (list === undefined || !list.every((p) => (OPENABLE_PATHS as readonly unknown[]).includes(p))) {
    throw ConfigError.invalid('open_endpoints', raw, `an array of paths among ${OPENABLE_PATHS.join(', ')}`);
  }
  return [...new Set(list as string[])];
}

/** 127.0.0.0/8, ::1 (and its IPv4-mapped form), localhost: only this machine can connect. */
export function isLoopbackHost(host: string): boolean {
  if (host === 'localhost' || host === '::1') return true;
  const v4 = host.startsWith('::ffff:') ? host.slice(7) : host;
  return isIP(v4) === 4 && v4.startsWith('127.');
}
