/**
 * Decoded audio lives in ArrayBuffers outside V8's heap, and V8 frees one only when a collection
 * finds it dead. An idle server runs no collection, so the samples of a two-hour upload stayed
 * resident (hundreds of MB, in the main thread and in the audio worker that converted them) until
 * the next busy moment. Code that makes such buffers notes their size; once enough is owed and no
 * request is running, one full collection gives the memory back (large buffers are mmapped, so freeing
 * them returns them to the system). It runs at most once per COLLECT_DELAY_MS and only after large
 * inputs, whose requests take seconds, so its few milliseconds never matter.
 *
 * A burst of ordinary requests leaves memory behind too: V8 grows the heap it keeps committed (its
 * young generation doubles under load) and glibc keeps freed blocks, and neither gives them back
 * to an idle process on its own schedule, so an idle server could hold 30-40 MB more than before
 * the burst for as long as it stays idle (the chaos soak measured it, docs/reliability.md). So once
 * the server has been quiet for IDLE_RELEASE_MS after serving, it collects and trims once, at most
 * once per MIN_RELEASE_INTERVAL_MS (a health probe every few seconds must not mean a collection
 * every few seconds).
 */
import { createRequire } from 'node:module';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Collect once at least this much large memory may have died. */
const COLLECT_THRESHOLD_BYTES = 64 * 1024 * 1024;
const COLLECT_DELAY_MS = 200;
/** Quiet this long after the last request, an idle server gives back what the last burst left. */
const IDLE_RELEASE_MS = 5000;
const MIN_RELEASE_INTERVAL_MS = 30_000;

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
let idleTimer: NodeJS.Timeout | undefined;
let lastRelease = Number.NEGATIVE_INFINITY;

/** Collections this module ran, for tests. */
export let releases = 0;

/** One full collection, then glibc's free blocks back to the system. */
function release(): void {
  releases++;
  owed = 0;
  lastRelease = performance.now();
  gc?.();
  mallocTrim?.(0);
}

/** A buffer of `bytes` was made for one request and dies with it. */
export function noteLargeBuffer(bytes: number): void {
  owed += bytes;
}

/** A request began: until every request has ended, its buffers may still be alive. */
export function requestStarted(): void {
  inFlight++;
  if (idleTimer) {
    clearTimeout(idleTimer);
    idleTimer = undefined;
  }
}

/**
 * A request ended. Once none is running and enough large memory may be garbage, collect it
 * shortly. Only when the server is quiet: a collection while a large request still holds its
 * buffers would free nothing and forget them; under steady load V8's own collections run anyway.
 */
export function requestEnded(): void {
  inFlight = Math.max(0, inFlight - 1);
  if (inFlight > 0 || !gc) return;
  if (!idleTimer && performance.now() - lastRelease >= MIN_RELEASE_INTERVAL_MS - IDLE_RELEASE_MS) {
    idleTimer = setTimeout(() => {
      idleTimer = undefined;
      if (inFlight === 0) release();
    }, IDLE_RELEASE_MS);
    idleTimer.unref();
  }
  if (owed < COLLECT_THRESHOLD_BYTES || timer) return;
  timer = setTimeout(() => {
    timer = undefined;
    // A request that began since keeps the debt for its own end.
    if (inFlight === 0) release();
  }, COLLECT_DELAY_MS);
  timer.unref();
}
