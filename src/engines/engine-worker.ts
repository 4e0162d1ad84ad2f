/**
 * One engine session's work outside the event loop, reached only by messages: in a worker thread,
 * or in a runner child process (`isolation: 'process'`) that shares nothing with the server.
 * A cancelled call ends the thread or kills the process, so the work really stops, and the next
 * call starts a fresh one. A thread or process that crashes fails only its call.
 */
import { type ChildProcess, fork } from 'node:child_process';
import type { EventEmitter } from 'node:events';
import { Worker } from 'node:worker_threads';
import { invalidRequest } from '../errors.js';
import type { ProcessInit } from './engine-port.js';
import type { EngineRequest, EngineResult, EngineSession, RunContext } from './types.js';

interface Reply {
  id: number;
}

/**
 * Where a session's engine code runs. A process costs a Node runtime (about 40-60 MB) and a copy of
 * the audio through a pipe, but a native fault kills only it, a call stuck in native code can be
 * stopped by killing it, and its own heap keeps one slot on one core: every real engine uses one.
 * Threads (cheap, zero-copy) remain for engine code that cannot crash or hang.
 */
export type Isolation = 'thread' | 'process';

const PROCESS_ENTRY = new URL('./engine-process.js', import.meta.url);

/**
 * The engine itself died (its runner process exited or was killed by a native fault, or its
 * thread threw an uncaught error) while serving a call: not the request's fault, and the model
 * may be broken, so the runtime unloads it and reports the reason.
 */
export class EngineCrashed extends Error {
  override readonly name = 'EngineCrashed';
}

/** What a call needs from a thread or a process: both are emitters of message, error and exit. */
interface Runner {
  events: EventEmitter;
  post(message: object, transfer: ArrayBuffer[]): void;
  stop(): Promise<void>;
}

function startThread(url: URL, data: unknown): Runner {
  const worker = new Worker(url, { workerData: data, execArgv: ['--no-warnings'] });
  return {
    events: worker,
    post: (message, transfer) => worker.postMessage(message, transfer),
    stop: async () => {
      await worker.terminate();
    },
  };
}

/** Runner processes alive now, so an exit that cannot wait for their teardown still ends them. */
const liveRunners = new Set<ChildProcess>();

/**
 * Kills every runner process at once (SIGKILL). For a process about to end without its normal
 * teardown: a runner stuck in native code would not notice its parent is gone and run on.
 */
export function killRunnerProcesses(): void {
  for (const child of liveRunners) child.kill('SIGKILL');
}

function startProcess(url: URL, data: unknown): Runner {
  const child: ChildProcess = fork(PROCESS_ENTRY, [], {
    serialization: 'advanced',
    // One slot, one core: V8's parallel and concurrent GC threads otherwise let one session use
    // 1.4 cores (measured with espeak), which the next slot then has to share.
    execArgv: ['--no-warnings', '--single-threaded-gc'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  liveRunners.add(child);
  child.once('exit', () => liveRunners.delete(child));
  child.send({ url: url.href, data } satisfies ProcessInit);
  return {
    events: child,
    post: (message) => child.send(message),
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
  };
}

export class EngineWorker<J extends object, R extends Reply> {
  #runner: Runner | undefined;
  #nextId = 1;

  constructor(
    private readonly url: URL,
    private readonly data: unknown,
    private readonly isolation: Isolation = 'thread',
  ) {}

  /**
   * Sends `job` (with a fresh id) and resolves with the engine's reply to it; events the engine
   * emits while it works go to `onEvent`.
   */
  call(
    job: J,
    signal: AbortSignal,
    transfer: ArrayBuffer[] = [],
    onEvent?: (event: unknown) => void,
  ): Promise<R> {
    signal.throwIfAborted();
    this.#runner ??= this.#start();
    const runner = this.#runner;
    const id = this.#nextId++;
    return new Promise<R>((resolve, reject) => {
      const cleanup = () => {
        runner.events.off('message', onMessage);
        runner.events.off('error', onFailure);
        runner.events.off('exit', onExit);
        signal.removeEventListener('abort', onAbort);
      };
      const discard = () => {
        if (this.#runner === runner) this.#runner = undefined;
        void runner.stop();
      };
      const onMessage = (reply: R & { event?: unknown }) => {
        if (reply.id !== id) return;
        if ('event' in reply) {
          onEvent?.(reply.event);
          return;
        }
        cleanup();
        resolve(reply);
      };
      const onFailure = (err: Error) => {
        cleanup();
        discard();
        reject(new EngineCrashed(`engine ${this.isolation} failed: ${err.message}`, { cause: err }));
      };
      const onExit = (code: number | null, signalName?: string | null) => {
        cleanup();
        discard();
        reject(
          new EngineCrashed(
            `engine ${this.isolation} exited ${signalName ? `on signal ${signalName}` : `with code ${code}`}`,
          ),
        );
      };
      const onAbort = () => {
        cleanup();
        discard();
        reject(signal.reason);
      };
      runner.events.on('message', onMessage);
      runner.events.on('error', onFailure);
      runner.events.on('exit', onExit);
      signal.addEventListener('abort', onAbort, { once: true });
      runner.post({ ...job, id }, transfer);
    });
  }

  /** Whether a thread or process is up for the next call (false before the first, and after a loss). */
  get running(): boolean {
    return this.#runner !== undefined;
  }

  #start(): Runner {
    const runner =
      this.isolation === 'process' ? startProcess(this.url, this.data) : startThread(this.url, this.data);
    // A runner can fail or end while no call listens: a thread whose engine code throws after its
    // reply, a runner process killed between calls (the OOM killer), a message sent to a process
    // whose channel just closed. An 'error' event nobody hears would end the server; here the
    // runner is dropped instead, and the next call starts a fresh one rather than failing on it.
    const retire = () => {
      if (this.#runner !== runner) return;
      this.#runner = undefined;
      void runner.stop();
    };
    runner.events.on('error', retire);
    runner.events.on('exit', retire);
    return runner;
  }

  async dispose(): Promise<void> {
    const runner = this.#runner;
    this.#runner = undefined;
    await runner?.stop();
  }
}

/** Base of the engine sessions whose work runs in an EngineWorker: it owns the worker and disposes it. */
export abstract class WorkerEngineSession<J extends object, R extends Reply> implements EngineSession {
  protected readonly worker: EngineWorker<J, R>;

  constructor(
    readonly id: string,
    url: URL,
    data: unknown,
    isolation: Isolation = 'process',
  ) {
    this.worker = new EngineWorker(url, data, isolation);
  }

  abstract run(request: EngineRequest, context: RunContext): Promise<EngineResult>;

  dispose(): Promise<void> {
    return this.worker.dispose();
  }
}

/** The request's input audio as a copy that may be transferred to a thread; a 400 without audio. */
export function inputSamples(request: EngineRequest, purpose: string): Float32Array<ArrayBuffer> {
  if (!request.audio) throw invalidRequest(`'audio' is required: ${purpose} needs input audio`);
  return request.audio.samples.slice();
}
