/**
 * One engine session's work in its own worker thread, reached only by messages. The event loop
 * never waits on engine code; a cancelled call terminates the thread, so the work really stops,
 * and the next call starts a fresh one. A thread that crashes fails only its call.
 */
import { Worker } from 'node:worker_threads';
import { invalidRequest } from '../errors.js';
import type { EngineRequest, EngineResult, EngineSession, RunContext } from './types.js';

interface Reply {
  id: number;
}

export class ThreadSession<J extends object, R extends Reply> {
  #worker: Worker | undefined;
  #nextId = 1;

  constructor(
    private readonly url: URL,
    private readonly workerData: unknown,
  ) {}

  /** Sends `job` (with a fresh id) and resolves with the thread's reply to it. */
  call(job: J, signal: AbortSignal, transfer: ArrayBuffer[] = []): Promise<R> {
    signal.throwIfAborted();
    this.#worker ??= new Worker(this.url, { workerData: this.workerData, execArgv: ['--no-warnings'] });
    const worker = this.#worker;
    const id = this.#nextId++;
    return new Promise<R>((resolve, reject) => {
      const cleanup = () => {
        worker.off('message', onMessage);
        worker.off('error', onFailure);
        worker.off('exit', onExit);
        signal.removeEventListener('abort', onAbort);
      };
      const discard = () => {
        if (this.#worker === worker) this.#worker = undefined;
        void worker.terminate();
      };
      const onMessage = (reply: R) => {
        if (reply.id !== id) return;
        cleanup();
        resolve(reply);
      };
      const onFailure = (err: Error) => {
        cleanup();
        discard();
        reject(err);
      };
      const onExit = (code: number) => onFailure(new Error(`engine thread exited with code ${code}`));
      const onAbort = () => {
        cleanup();
        discard();
        reject(signal.reason);
      };
      worker.on('message', onMessage);
      worker.on('error', onFailure);
      worker.on('exit', onExit);
      signal.addEventListener('abort', onAbort, { once: true });
      worker.postMessage({ ...job, id }, transfer);
    });
  }

  async dispose(): Promise<void> {
    const worker = this.#worker;
    this.#worker = undefined;
    await worker?.terminate();
  }
}

/** Base of the engine sessions whose work runs in a ThreadSession: it owns the thread and disposes it. */
export abstract class ThreadEngineSession<J extends object, R extends Reply> implements EngineSession {
  protected readonly thread: ThreadSession<J, R>;

  constructor(
    readonly id: string,
    url: URL,
    workerData: unknown,
  ) {
    this.thread = new ThreadSession(url, workerData);
  }

  abstract run(request: EngineRequest, context: RunContext): Promise<EngineResult>;

  dispose(): Promise<void> {
    return this.thread.dispose();
  }
}

/** The request's input audio as a copy that may be transferred to a thread; a 400 without audio. */
export function inputSamples(request: EngineRequest, purpose: string): Float32Array<ArrayBuffer> {
  if (!request.audio) throw invalidRequest(`'audio' is required: ${purpose} needs input audio`);
  return request.audio.samples.slice();
}
