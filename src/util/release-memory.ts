/**
 * Decoded audio lives in ArrayBuffers outside V8's heap, and V8 frees one only when a collection
 * finds it dead. An idle server runs no collection, so the samples of a two-hour upload stayed
 * resident (hundreds of MB, in the main thread and in the audio worker that converted them) until
 * the next busy moment. Code that makes such buffers notes their size; once enough is owed and no
 * request is running, one full collection gives the memory back (large buffers are mmapped, so freeing
 * them returns them to the system). It runs at most once per COLLECT_DELAY_MS and only after large
 * inputs, whose requests take seconds, so its few milliseconds never matter.
 */
import { createRequire } from 'node:module';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Collect once at least this much large memory may have died. */
const COLLECT_THRESHOLD_BYTES = 64 * 1024 * 1024;
const COLLECT_DELAY_MS = 200;

// Exposes gc() to new contexts and to worker threads started from now on (the audio workers).
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as (() => void) | undefined;

/**
 * glibc keeps freed small blocks (a socket's 64 KB reads of a large body) in its heap rather than
 * returning them; malloc_trim gives back what it can. Bound through koffi where glibc is there.
 */
const mallocTrim: ((pad: number) => number) | undefined = (() => {
  try {
    const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi').default;
    return koffi.load('libc.so.6').func('int malloc_trim(size_t pad)') as (pad: number) => number;
  } catch {
    return undefined;
  }
})();

let owed = 0;
let inFlight = 0;
let timer: NodeJS.Timeout | undefined;

/** A buffer of `bytes` was made for one request and dies with it. */
export function noteLargeBuffer(bytes: number): void {
  owed += bytes;
}

/** A request began: until every request has ended, its buffers may still be alive. */
export function requestStarted(): void {
  inFlight++;
}

/**
 * A request ended. Once none is running and enough large memory may be garbage, collect it
 * shortly. Only when the server is quiet: a collection while a large request still holds its
 * buffers would free nothing and forget them; under steady load V8's own collections run anyway.
 */
export function requestEnded(): void {
  inFlight = Math.max(0, inFlight - 1);
  if (inFlight > 0 || owed < COLLECT_THRESHOLD_BYTES || timer || !gc) return;
  timer = setTimeout(() => {
    timer = undefined;
    // A request that began since keeps the debt for its own end.
    if (inFlight > 0) return;
    owed = 0;
    gc();
    mallocTrim?.(0);
  }, COLLECT_DELAY_MS);
  timer.unref();
}
