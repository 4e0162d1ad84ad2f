/** Abortable waits. Every wait in voxd takes a signal so that nothing waits for a client that left. */
import { access } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';

/** Resolves after `ms`; rejects with the signal's reason when it aborts first. */
export async function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  await delay(ms, undefined, signal ? { signal } : undefined).catch((err: unknown) => {
    throw signal?.aborted ? signal.reason : err;
  });
}

const GATE_POLL_MS = 5;

/** Resolves once `path` exists. Polling keeps it simple and works for gates made by other processes. */
export async function waitForFile(path: string, signal?: AbortSignal): Promise<void> {
  for (;;) {
    signal?.throwIfAborted();
    try {
      await access(path);
      return;
    } catch {
      await sleep(GATE_POLL_MS, signal);
    }
  }
}

/** A promise that never settles on its own and rejects when the signal aborts. */
export function untilAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) return reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

/** Waits for `promise` but stops waiting (the work goes on) when the signal aborts. */
export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

export interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(reason: unknown): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (reason: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
