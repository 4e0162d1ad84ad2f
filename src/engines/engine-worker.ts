/**
 * One engine session's work outside the event loop, reached only by messages: in a worker thread,
 * or in a runner child process that shares nothing with the server (one runner may serve all the
 * slots of a model). A cancelled call ends the thread or kills the process, so the work really
 * stops, and the next call starts a fresh one. A runner that crashes fails only its calls.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { type EventEmitter, once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { heldSamples } from '../audio/types.js';
import type { ModelIsolation } from '../config/types.js';
import { invalidField } from '../errors.js';
import type { EventAck, ProcessInit } from './engine-port.js';
import { type JobFailure, type JobReply, jobFailed } from './job-error.js';
import { hasBulk, readBulk, writeBulk } from './runner-bulk.js';
import type { RunnerSamples } from './runner-samples.js';
import { makeRunnerTemp, removeRunnerTemp, removeRunnerTempsNow } from './runner-temp.js';
import type { EngineRequest, EngineResult, EngineSession, RunContext } from './types.js';

interface Reply {
  id: number;
}

/** A call in flight on a runner: where its messages go, and how it fails. */
interface PendingCall {
  /** An event of the running job (`event` set) or the job's reply. */
  message(message: Reply & { event?: unknown; bytes?: number }): void;
  fail(err: Error): void;
}

/**
 * Where an engine's code runs. A process costs a Node runtime (about 40-60 MB) and a copy of the
 * audio through a pipe, but a native fault kills only it, a call stuck in native code can be
 * stopped by killing it, and its own heap keeps its work off the server's event loop: every real
 * engine uses one. Threads (cheap, zero-copy) remain for engine code that cannot crash or hang.
 */
export type RunnerKind = 'thread' | 'process';

const PROCESS_ENTRY = new URL('./engine-process.js', import.meta.url);

/**
 * The engine itself died (its runner process exited or was killed by a native fault, or its
 * thread threw an uncaught error) while serving a call: not the request's fault, and the model
 * may be broken, so the runtime unloads it and reports the reason.
 */
export class EngineCrashed extends Error {
  override readonly name = 'EngineCrashed';
}

/**
 * A runner shared by several calls (a model's slots under isolation "model") was stopped while
 * this call ran on it, for a reason that is not this call's: another call on it was cancelled in
 * native code (its client left, it ran past max_inference_ms) and killing the runner was the only
 * way to stop it, or the runner crashed while several calls ran and the fault cannot be pinned on
 * one. The request can be retried; the next call starts a fresh runner.
 */
export class EngineRestarted extends Error {
  override readonly name = 'EngineRestarted';
  constructor(
    message: string,
    /** True when the runner died by itself (a fault the model may have), false when it was killed. */
    readonly crashed: boolean,
    /** True for one of the calls lost with the runner, so that a loss is counted once. */
    readonly firstOfRunner = true,
  ) {
    super(message);
  }
}

/** What a call needs from a thread or a process: both are emitters of message, error and exit. */
interface Runner {
  events: EventEmitter;
  /** The runner's process id (a process runner), for the resident-memory metric. */
  pid?: number | undefined;
  post(message: object, transfer: ArrayBuffer[]): void;
  stop(): Promise<void>;
  /** Calls in flight on this runner now, by job id: the runner's one listener set routes to them. */
  pending: Map<number, PendingCall>;
  /** Set once the runner is stopped or lost: its exit then fails nothing more. */
  ended?: boolean;
  /** A process runner's temporary folder, through which large arrays go (runner-bulk.ts). */
  bulkDir?: string;
}

function startThread(url: URL, data: unknown): Runner {
  const worker = new Worker(url, { workerData: data, execArgv: ['--no-warnings'] });
  return {
    events: worker,
    post: (message, transfer) => worker.postMessage(message, transfer),
    stop: async () => {
      await worker.terminate();
    },
    pending: new Map(),
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
  removeRunnerTempsNow();
}

/**
 * Kills every runner process and waits, `ms` at most, until each has exited, so that a server
 * ending cleanly leaves no runner behind it: a SIGKILLed process still takes a moment to die (its
 * memory unmapped), and one that had not when the server exited would run on, orphaned, meanwhile.
 */
export async function endRunnerProcesses(ms: number): Promise<void> {
  const children = [...liveRunners];
  killRunnerProcesses();
  if (children.length === 0) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    // A child's 'error' (a signal it could not be sent) is no reason to wait longer, nor to throw.
    Promise.all(children.map((child) => once(child, 'exit').catch(() => undefined))),
    new Promise((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  clearTimeout(timer);
}

/** Runner processes alive now (their pids), so a test or a benchmark can find and measure them. */
export function runnerProcessIds(): number[] {
  return [...liveRunners].flatMap((child) => (child.pid === undefined ? [] : [child.pid]));
}

function startProcess(url: URL, data: unknown): Runner {
  // The runner's temporary files live in a folder of the server's, removed when the runner exits
  // (runner-temp.ts): a runner killed mid-request cannot clean up after itself.
  const temp = makeRunnerTemp();
  let child: ChildProcess;
  try {
    child = fork(PROCESS_ENTRY, [], {
      serialization: 'advanced',
      // One runner's work stays on the cores its calls use: V8's parallel and concurrent GC threads
      // otherwise let one session use 1.4 cores (measured with espeak), which the next slot then
      // has to share. A shared runner's parallelism is its native calls on the libuv pool.
      execArgv: ['--no-warnings', '--single-threaded-gc'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, TMPDIR: temp },
    });
  } catch (err) {
    void removeRunnerTemp(temp);
    throw err;
  }
  liveRunners.add(child);
  const removed = new Promise<void>((resolve) =>
    child.once('exit', () => {
      liveRunners.delete(child);
      void removeRunnerTemp(temp).then(resolve);
    }),
  );
  child.send({ url: url.href, data } satisfies ProcessInit);
  return {
    events: child,
    pid: child.pid,
    post: (message) => child.send(message),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await removed;
    },
    pending: new Map(),
    bulkDir: temp,
  };
}

function describe(reason: unknown): string {
  return reason instanceof Error ? reason.message : String(reason);
}

export class EngineWorker<J extends object, R extends Reply> {
  #runner: Runner | undefined;
  #nextId = 1;

  constructor(
    private readonly url: URL,
    private readonly data: unknown,
    private readonly kind: RunnerKind = 'thread',
  ) {}

  /**
   * Sends `job` (with a fresh id) and resolves with the engine's reply to it; events the engine
   * emits while it works go to `onEvent`, and each is acknowledged to the engine once the promise
   * `onEvent` returned for it settled (at once when it returned none): the engine's emit waits
   * while too much of its output is unacknowledged, so a slow consumer slows this call's job alone
   * (see engine-port.ts). Several calls may be in flight at once (a runner shared
   * by a model's slots serves them concurrently); a cancelled call stops the runner, and the other
   * calls then on it fail with EngineRestarted.
   */
  call(
    job: J,
    signal: AbortSignal,
    transfer: ArrayBuffer[] = [],
    onEvent?: (event: unknown) => unknown,
  ): Promise<R> {
    signal.throwIfAborted();
    this.#runner ??= this.#start();
    const runner = this.#runner;
    const id = this.#nextId++;
    return new Promise<R>((resolve, reject) => {
      let settled = false;
      const finish = () => {
        settled = true;
        runner.pending.delete(id);
        signal.removeEventListener('abort', onAbort);
      };
      const call: PendingCall = {
        message: (reply) => {
          if ('event' in reply) {
            const taken = onEvent?.(reply.event);
            const { bytes } = reply;
            if (bytes === undefined) return;
            // An ack after the call ended would reach no job (or a runner already gone): dropped.
            const ack = () => {
              if (!settled) runner.post({ ack: id, bytes } satisfies EventAck, []);
            };
            if (taken instanceof Promise) taken.then(ack, ack);
            else ack();
            return;
          }
          finish();
          resolve(reply as unknown as R);
        },
        fail: (err) => {
          finish();
          reject(err);
        },
      };
      const onAbort = () => {
        finish();
        // Work already in native code cannot be interrupted: only ending the runner stops it. The
        // other calls on it are lost with it, and told so at once.
        const why = `its engine runner was stopped because another request on it was cancelled (${describe(signal.reason)})`;
        let first = true;
        for (const other of [...runner.pending.values()]) {
          other.fail(new EngineRestarted(why, false, first));
          first = false;
        }
        this.#end(runner);
        reject(signal.reason);
      };
      runner.pending.set(id, call);
      signal.addEventListener('abort', onAbort, { once: true });
      const message = { ...job, id };
      if (!runner.bulkDir) return runner.post(message, transfer);
      // A call cancelled while its arrays were written is not sent (its runner is ending); one
      // whose files could not be written (a full disk) sends them in the message as before.
      void writeBulk(message, runner.bulkDir)
        .then(
          (written) => settled || runner.post(written, []),
          () => settled || runner.post(message, transfer),
        )
        // A message the channel cannot take fails its call, as it did when it was sent at once.
        .catch((err: Error) => settled || call.fail(err));
    });
  }

  /** The process serving calls now; undefined before the first call, after a loss, or on a thread. */
  get processId(): number | undefined {
    return this.#runner?.pid;
  }

  /** Whether a thread or process is up for the next call (false before the first, and after a loss). */
  get running(): boolean {
    return this.#runner !== undefined;
  }

  #start(): Runner {
    const runner =
      this.kind === 'process' ? startProcess(this.url, this.data) : startThread(this.url, this.data);
    // One listener set per runner, whatever the number of calls: messages go to their call by id.
    // A runner can also fail or end while no call runs (a thread whose engine code throws after its
    // reply, a process killed between calls by the OOM killer, a message sent to a process whose
    // channel just closed): an 'error' nobody heard would end the server; the runner is dropped
    // instead, and the next call starts a fresh one rather than failing on it.
    runner.events.on('message', (message: Reply) => {
      if (runner.bulkDir && 'ok' in message && hasBulk(message))
        void readBulk(message, runner.bulkDir).then(
          (read) => runner.pending.get(read.id)?.message(read),
          (err: Error) =>
            runner.pending.get(message.id)?.fail(new Error(`engine reply unreadable: ${err.message}`)),
        );
      else runner.pending.get(message.id)?.message(message);
    });
    runner.events.on('error', (err: Error) => this.#lost(runner, `failed: ${err.message}`, err));
    runner.events.on('exit', (code: number | null, signalName?: string | null) =>
      this.#lost(runner, signalName ? `exited on signal ${signalName}` : `exited with code ${code}`),
    );
    return runner;
  }

  /** Stops `runner` (once) and forgets it, so that the next call starts a fresh one. */
  #end(runner: Runner): void {
    if (this.#runner === runner) this.#runner = undefined;
    if (runner.ended) return;
    runner.ended = true;
    void runner.stop();
  }

  /**
   * The runner died by itself: the calls on it fail, the call's own fault when it was alone on
   * it (EngineCrashed), nobody's in particular when several shared it (EngineRestarted, counted once).
   */
  #lost(runner: Runner, what: string, cause?: Error): void {
    const calls = [...runner.pending.values()];
    this.#end(runner);
    for (const [i, call] of calls.entries())
      call.fail(
        calls.length > 1
          ? new EngineRestarted(
              `its engine ${this.kind} ${what} while ${calls.length} requests ran on it`,
              true,
              i === 0,
            )
          : new EngineCrashed(`engine ${this.kind} ${what}`, { cause }),
      );
  }

  async dispose(): Promise<void> {
    const runner = this.#runner;
    this.#runner = undefined;
    if (runner) runner.ended = true;
    await runner?.stop();
  }
}

/** A session's runner and whether the session owns it (it does unless the model shares one runner). */
export type SessionRunner<J extends object, R extends Reply> = [worker: EngineWorker<J, R>, owned: boolean];

/**
 * Base of the engine sessions whose work runs in an EngineWorker: the session's own (isolation
 * "session"), which it disposes, or its model's shared runner (isolation "model"), which the
 * loaded model disposes after its sessions. `S` is what the loaded model gives each session for
 * its requests (defaults, voices), beyond what the runner was started with.
 */
export abstract class WorkerEngineSession<J extends object, R extends JobReply, S = void>
  implements EngineSession
{
  protected readonly worker: EngineWorker<J, R>;
  readonly #ownsWorker: boolean;

  constructor(
    readonly id: string,
    [worker, owned]: SessionRunner<J, R>,
    protected readonly settings: S,
  ) {
    this.worker = worker;
    this.#ownsWorker = owned;
  }

  abstract run(request: EngineRequest, context: RunContext): Promise<EngineResult>;

  /** Runs `job` on the runner and resolves with its reply; a failed job throws its JobError. */
  protected async job(
    job: J,
    signal: AbortSignal,
    transfer?: ArrayBuffer[],
    onEvent?: (event: unknown) => unknown,
  ): Promise<Exclude<R, JobFailure>> {
    const reply = await this.worker.call(job, signal, transfer, onEvent);
    if (!reply.ok) throw jobFailed(reply);
    return reply as Exclude<R, JobFailure>;
  }

  processId(): number | undefined {
    return this.worker.processId;
  }

  async dispose(): Promise<void> {
    if (this.#ownsWorker) await this.worker.dispose();
  }
}

/**
 * The runners of one loaded model's sessions: one process shared by all of them (isolation
 * "model": the weights live once and the sessions' calls run concurrently on one native object),
 * or a process each (isolation "session").
 */
export class ModelRunners<J extends object, R extends Reply> {
  readonly #shared: EngineWorker<J, R> | undefined;

  constructor(
    isolation: ModelIsolation,
    private readonly url: URL,
    private readonly data: unknown,
  ) {
    if (isolation === 'model') this.#shared = new EngineWorker(url, data, 'process');
  }

  /** The runner for a new session. */
  forSession(): SessionRunner<J, R> {
    return this.#shared ? [this.#shared, false] : [new EngineWorker(this.url, this.data, 'process'), true];
  }

  /** Ends the shared runner (the sessions, each with its own, have ended theirs). */
  async dispose(): Promise<void> {
    await this.#shared?.dispose();
  }
}

/**
 * The request's input audio for its runner, as it is (runner-samples.ts): not copied here, since
 * the message to the runner is a copy already; a 400 without audio.
 */
export function inputSamples(request: EngineRequest, purpose: string): RunnerSamples {
  if (!request.audio) throw invalidField('audio', `'audio' is required: ${purpose} needs input audio`);
  return heldSamples(request.audio);
}
