/** The pocketsphinx and sphinxbase libraries (Debian's 0.8+5prealpha), loaded once through koffi. */
import { createRequire } from 'node:module';

export type Fn = (...args: unknown[]) => unknown;
export interface Koffi {
  load(path: string): { func(signature: string): Fn };
  struct(name: string, fields: Record<string, string>): unknown;
  offsetof(type: unknown, field: string): number;
  alloc(type: string, length: number): unknown;
  free(pointer: unknown): void;
  view(pointer: unknown, bytes: number): ArrayBuffer;
  decode(ref: unknown, type: unknown, len?: number): unknown;
  decode(ref: unknown, offset: number, type: unknown, len?: number): unknown;
  encode(ref: unknown, offset: number, type: unknown, value: unknown, len?: number): void;
}

export const koffi = createRequire(import.meta.url)('koffi') as Koffi;
export const pocketsphinx = koffi.load('libpocketsphinx.so.3');
export const sphinxbase = koffi.load('libsphinxbase.so.3');
// The library logs every step to stderr unless told otherwise.
sphinxbase.func('int err_set_logfile(const char *path)')('/dev/null');
