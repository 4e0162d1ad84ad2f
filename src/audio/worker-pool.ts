/**
 * A small pool of worker threads with piscina's contract: `run(job, {signal, transfer})`, a bounded
 * queue (`maxQueue`; one more job is refused at once with E_QUEUE_FULL, a 503 with Retry-After,
 * rather than waiting behind a backlog the threads cannot clear), and a signal that takes a job
 * still waiting out of the queue, so work for a caller that left never runs. A job already on a
 * thread runs to its end: stopping it would mean killing the thread (piscina terminates it), and
 * a caller may still own what the job reads (an open file) until its reply.
 *
 * Written here rather than taken from piscina: the audio jobs move their buffers both ways and
 * carry typed failures back, piscina's worker side wants a module exporting one function per
 * pool and its own message framing, and what voxd needs of it (bound, abort, transfer) is this file.
 */
import { Worker } from 'node:worker_threads';
import { VoxdError } from '../errors.js';
import type { AbortSource } from '../util/lazy-abort.js';

/** What a worker sends back: `ok` false carries a failure the pool's `failure` turns into an error. */
export type WorkerReply = { id: number; ok: boolean };

export interface WorkerPoolOptions<R extends WorkerReply> {
  /** The worker's script: it answers each `{...job, id}` message with one reply of that id. */
  url: URL;
  /** Threads at most; they are started on demand. */
  size: number;
  /** Jobs that may wait for a thread; one more is refused (E_QUEUE_FULL). */
  maxQueue: number;
  /** Names the pool in the refusal's message. */
  name: string;
  /** The error a reply with `ok` false stands for. */
  failure(reply: R): Error;
}

export interface RunOptions {
  /** The caller going away: a job still queued leaves the queue and rejects with its reason. */
  signal?: AbortSource;
  /** Buffers of the job moved to the thread rather than copied (the caller's no more). */
  transfer?: ArrayBuffer[];
}

interface Queued<R> {
  job: object;
  transfer: ArrayBuffer[];
  resolve(reply: R): void;
  reject(err: unknown): void;
  /** Stops listening to the caller's signal: once the job starts or settles. */
  unlisten(): void;
}

export class WorkerPool<J extends object, R extends WorkerReply> {
  readonly #options: WorkerPoolOptions<R>;
  readonly #idle: Worker[] = [];
  /** The job each busy worker runs, by its id. */
  readonly #busy = new Map<Worker, number>();
  readonly #queue: Queued<R>[] = [];
  readonly #running = new Map<number, Queued<R>>();
  #nextId = 1;
  /** Jobs started on a thread so far, for tests. */
  offloaded = 0;

  constructor(options: WorkerPoolOptions<R>) {
    this.#options = options;
  }

  /** Jobs waiting for a thread. */
  get queued(): number {
    return this.#queue.length;
  }

  run(job: J, { signal, transfer = [] }: RunOptions = {}): Promise<R> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    const { size, maxQueue, name } = this.#options;
    if (this.#queue.length >= maxQueue && !this.#hasRoom()) {
      return Promise.reject(
        new VoxdError(
          'E_QUEUE_FULL',
          `the ${name} is busy: ${this.#queue.length} jobs wait for its ${size} threads (its queue holds ${maxQueue}); retry after 1 s`,
          { retryAfterS: 1 },
        ),
      );
    }
    return new Promise<R>((resolve, reject) => {
      const onAbort = () => this.#leave(entry, signal!.reason);
      const entry: Queued<R> = {
        job: { ...job, id: this.#nextId++ },
        transfer,
        resolve,
        reject,
        unlisten: () => signal?.removeEventListener('abort', onAbort),
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#queue.push(entry);
      this.#dispatch();
    });
  }

  /** Stops every thread: for tests and tools that made a pool of their own. Queued jobs are refused. */
  async close(): Promise<void> {
    for (const entry of this.#queue.splice(0))
      this.#fail(entry, new Error(`the ${this.#options.name} closed`));
    const workers = [...this.#idle, ...this.#busy.keys()];
    await Promise.all(workers.map((worker) => worker.terminate()));
  }

  #hasRoom(): boolean {
    return this.#idle.length > 0 || this.#busy.size < this.#options.size;
  }

  /** A queued job whose caller left: out of the queue, never run. */
  #leave(entry: Queued<R>, reason: unknown): void {
    const at = this.#queue.indexOf(entry);
    if (at < 0) return;
    this.#queue.splice(at, 1);
    this.#fail(entry, reason);
  }

  #fail(entry: Queued<R>, err: unknown): void {
    entry.unlisten();
    entry.reject(err);
  }

  #dispatch(): void {
    while (this.#queue.length > 0) {
      const worker = this.#idle.pop() ?? (this.#busy.size < this.#options.size ? this.#spawn() : undefined);
      if (!worker) return;
      const entry = this.#queue.shift()!;
      entry.unlisten();
      try {
        // Throws before anything is sent for a job that cannot be cloned or moved: the job fails,
        // the worker stays idle.
        worker.postMessage(entry.job, entry.transfer);
      } catch (err) {
        worker.unref();
        this.#idle.push(worker);
        entry.reject(err);
        continue;
      }
      const id = (entry.job as { id: number }).id;
      this.#running.set(id, entry);
      this.#busy.set(worker, id);
      this.offloaded++;
      worker.ref();
    }
  }

  #spawn(): Worker {
    const worker = new Worker(this.#options.url);
    worker.on('message', (reply: R) => {
      const entry = this.#running.get(reply.id);
      this.#running.delete(reply.id);
      this.#busy.delete(worker);
      // An idle worker must not keep the process alive.
      worker.unref();
      this.#idle.push(worker);
      if (entry && reply.ok) entry.resolve(reply);
      else if (entry) entry.reject(this.#options.failure(reply));
      this.#dispatch();
    });
    worker.on('error', (err) => this.#lose(worker, err));
    worker.on('exit', (code) =>
      this.#lose(worker, new Error(`${this.#options.name} thread exited with code ${code}`)),
    );
    return worker;
  }

  /** A worker that died fails its job only; the next job gets a fresh worker. */
  #lose(worker: Worker, err: Error): void {
    const id = this.#busy.get(worker);
    this.#busy.delete(worker);
    const idle = this.#idle.indexOf(worker);
    if (idle >= 0) this.#idle.splice(idle, 1);
    if (id !== undefined) {
      const entry = this.#running.get(id);
      this.#running.delete(id);
      entry?.reject(err);
    }
    this.#dispatch();
  }
}
