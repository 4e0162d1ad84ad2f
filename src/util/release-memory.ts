/**
 * Decoded audio lives in ArrayBuffers outside V8's heap, and V8 frees one only when a collection
 * finds it dead. An idle server runs no collection, so the samples of a two-hour upload stayed
 * resident (hundreds of MB, in the main thread and in the audio worker that converted them) until
 * the next busy moment. Code that makes such buffers notes their size (from OWED_MIN_BYTES up);
 * once enough is owed and no request is running, one full collection gives the memory back (large
 * buffers are mmapped, so freeing them returns them to the system). It runs at most once per
 * COLLECT_DELAY_MS and only after large inputs, whose requests take seconds, so its few
 * milliseconds never matter.
 *
 * A burst of ordinary requests leaves memory behind too: V8 grows the heap it keeps committed (its
 * young generation doubles under load) and glibc keeps freed blocks, and neither gives them back
 * to an idle process on its own schedule, so an idle server could hold 30-40 MB more than before
 * the burst for as long as it stays idle (the chaos soak measured it, docs/reliability.md). So once
 * the server has been quiet for IDLE_RELEASE_MS after serving, it collects and trims once, at most
 * once per MIN_RELEASE_INTERVAL_MS. Only requests that do work count (not GET, HEAD or OPTIONS):
 * a health probe, a scrape or the web UI's polling every few seconds must neither keep an idle
 * server from ever giving memory back nor make it collect every few seconds. A burst that ends
 * just after a release is given back too, once the interval has passed.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { type Clock, systemClock, type Timer } from './clock.js';
import { M_MMAP_THRESHOLD, mallocTrim, mallopt } from './libc.js';

/** Collect once at least this much large memory may have died. */
export const COLLECT_THRESHOLD_BYTES = 64 * 1024 * 1024;
/**
 * What one note must reach to be owed. A short request's buffers (a 5 s clip's 260 KB body, its
 * decoded bytes) die young with it, and the scavenges their own allocation starts free them. A
 * forced full collection does more harm than good there: after one made at such a quiet moment, V8
 * ran a full mark-compact every 250-300 ms under the load that followed, for as long as it was
 * measured (25 s), which cost a 5 s VAD request about 1.5 ms more of the server's background threads
 * and about 1 ms more of its main thread (docs/performance.md, "Short requests").
 */
export const OWED_MIN_BYTES = 1024 * 1024;
export const COLLECT_DELAY_MS = 200;
/** Quiet this long after the last request, an idle server gives back what the last burst left. */
export const IDLE_RELEASE_MS = 5000;
export const MIN_RELEASE_INTERVAL_MS = 30_000;

/**
 * Blocks from this size on are mmapped and so go back to the system when freed. glibc starts there
 * too but raises the threshold to the size of each mmapped block freed (up to 32 MiB), so after a
 * few large buffers died (an upload's samples, ffmpeg's output in 1 MB blocks) later ones came
 * from the arenas and stayed there as free blocks: the chaos soak saw the allocator's free memory
 * grow 2.6 -> 7.4 MiB in 60 s with nothing leaked. Setting it fixes it where it starts.
 *
 * Not at glibc's own 128 KiB: a short request's buffers (a 5 s upload's body, its decoded bytes)
 * are 150-300 KB, and mmapped they are fresh pages every time, whose faults cost a 5.6 s VAD request
 * about 2 ms of the main thread on this project's machines (docs/performance.md, "Short requests").
 * Below 512 KiB they come from the arenas, freed blocks reused; the idle release trims what is left.
 */
export const MMAP_THRESHOLD_BYTES = 512 * 1024;
mallopt?.(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES);

// Exposes gc() to new contexts and to worker threads started from now on (the audio workers).
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as (() => void) | undefined;

/**
 * When to collect. One timer at most: a request's end only notes the time, and the timer, when it
 * fires early, waits out the rest of the quiet period (no timer made and cancelled per request).
 */
export class MemoryRelease {
  readonly #clock: Clock;
  readonly #collect: () => void;
  #owed = 0;
  #inFlight = 0;
  #lastEnd = Number.NEGATIVE_INFINITY;
  #lastRelease = Number.NEGATIVE_INFINITY;
  #idleTimer: Timer | undefined;
  #collectTimer: Timer | undefined;
  /** Collections run so far, for tests. */
  releases = 0;

  constructor(clock: Clock, collect: () => void) {
    this.#clock = clock;
    this.#collect = collect;
  }

  /** Requests that do work now running. */
  get running(): number {
    return this.#inFlight;
  }

  /** A buffer of `bytes` was made for one request and dies with it (owed from OWED_MIN_BYTES). */
  noteLargeBuffer(bytes: number): void {
    if (bytes >= OWED_MIN_BYTES) this.#owed += bytes;
  }

  /** A request that does work began: until every such request has ended, nothing is collected. */
  requestStarted(): void {
    this.#inFlight++;
  }

  /**
   * A request that does work ended. Once none is running and enough large memory may be garbage,
   * collect it shortly. Only when the server stayed quiet that long: a collection while a large
   * request still holds its buffers would free nothing and forget them, and under steady load V8's
   * own collections run anyway. One request at a time, back to back, is steady load: with a full
   * collection whenever the delay happened to end between two of them, a 6 s VAD request took
   * 2.2-3.1 ms of the main thread (three runs), against 2.1-2.3 ms without (docs/performance.md).
   */
  requestEnded(): void {
    this.#inFlight = Math.max(0, this.#inFlight - 1);
    this.#lastEnd = this.#clock.now();
    if (this.#inFlight > 0) return;
    this.#armIdle();
    this.#armCollect();
  }

  /** Collects once no request has run for COLLECT_DELAY_MS, when enough large memory may be garbage. */
  #armCollect(): void {
    if (this.#owed < COLLECT_THRESHOLD_BYTES || this.#collectTimer) return;
    const due = this.#lastEnd + COLLECT_DELAY_MS;
    this.#collectTimer = this.#clock.after(
      Math.max(0, due - this.#clock.now()),
      () => {
        this.#collectTimer = undefined;
        // A request running now keeps the debt for its own end, which arms this again; one that
        // ran since moves the collection to the delay after its end.
        if (this.#inFlight > 0) return;
        if (this.#clock.now() < this.#lastEnd + COLLECT_DELAY_MS) this.#armCollect();
        else this.#release();
      },
      { unref: true },
    );
  }

  /** When the idle release may run: quiet long enough, and the last release long enough ago. */
  #idleDue(): number {
    return Math.max(this.#lastEnd + IDLE_RELEASE_MS, this.#lastRelease + MIN_RELEASE_INTERVAL_MS);
  }

  #armIdle(): void {
    // Nothing to give back unless a request ended since the last release.
    if (this.#idleTimer || this.#lastEnd < this.#lastRelease) return;
    this.#idleTimer = this.#clock.after(
      Math.max(0, this.#idleDue() - this.#clock.now()),
      () => {
        this.#idleTimer = undefined;
        // A request running now re-arms the timer when it ends.
        if (this.#inFlight > 0) return;
        if (this.#clock.now() < this.#idleDue()) this.#armIdle();
        else this.#release();
      },
      { unref: true },
    );
  }

  /** One full collection, then glibc's free blocks back to the system. */
  #release(): void {
    this.releases++;
    this.#owed = 0;
    this.#lastRelease = this.#clock.now();
    this.#collect();
  }
}

/**
 * The process's own: one full collection, then glibc's free blocks back to the system (it keeps
 * freed small blocks, a socket's 64 KB reads of a large body, rather than returning them).
 */
export const memoryRelease = new MemoryRelease(systemClock, () => {
  gc?.();
  mallocTrim?.(0);
});
