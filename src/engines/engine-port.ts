/**
 * The engine side of a session's message boundary. An engine module (`*-worker.ts`) reads its data
 * and serves jobs through this file, so the same module runs in a runner child process
 * (src/engines/engine-process.ts, what voxd uses) or a worker thread (tests) without knowing which.
 */
import { tmpdir } from 'node:os';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { ownsItsMemory } from '../util/own-memory.js';
import { failureReply } from './job-error.js';
import { readBulkSync, writeBulkSync } from './runner-bulk.js';

interface Job {
  id: number;
}

/**
 * The main side's acknowledgement of one emitted event: the caller took it (a stream wrote it to its
 * client), so its bytes no longer count against the job's window. See `serveJobs`' emit.
 */
export interface EventAck {
  ack: number;
  bytes: number;
}

/**
 * The most bytes of events one job may have sent and not yet had acknowledged before its emit
 * waits: with the server's stream buffer (STREAM_BUFFER_BYTES) this bounds what a client that does
 * not read holds in the server. Per job, so on a runner shared by several slots one slot's slow
 * client pauses only its own job.
 */
export const EMIT_WINDOW_BYTES = 256 * 1024;
/** The most unacknowledged events one job may have in flight (small text events count too). */
export const EMIT_WINDOW_EVENTS = 64;

/** A job's unacknowledged events, and the emit waiting for room, if any. */
interface Window {
  bytes: number;
  events: number;
  wake: (() => void) | undefined;
}
const windows = new Map<number, Window>();

function isAck(message: unknown): message is EventAck {
  return typeof (message as EventAck).ack === 'number';
}

function acknowledge({ ack, bytes }: EventAck): void {
  const window = windows.get(ack);
  if (!window) return;
  window.bytes -= bytes;
  window.events -= 1;
  if (window.wake && window.bytes <= EMIT_WINDOW_BYTES && window.events <= EMIT_WINDOW_EVENTS) {
    const wake = window.wake;
    window.wake = undefined;
    wake();
  }
}

/** What an event costs against the window: its buffers' and strings' sizes, one level deep. */
export function eventBytes(event: object): number {
  let bytes = 64;
  for (const value of Object.values(event)) {
    if (typeof value === 'string') bytes += value.length;
    else if (ArrayBuffer.isView(value)) bytes += value.byteLength;
    else if (Array.isArray(value)) bytes += 64 * value.length;
    else if (value && typeof value === 'object') bytes += 64;
  }
  return bytes;
}

/** The first message a runner process gets: which engine module to run, and its data. */
export interface ProcessInit {
  url: string;
  data: unknown;
}

const inProcess = isMainThread && typeof process.send === 'function';
let processData: unknown;
let onJob: ((job: Job) => void) | undefined;
const early: Job[] = [];
let init: ((value: ProcessInit) => void) | undefined;
const initialised = new Promise<ProcessInit>((resolve) => {
  init = resolve;
});

if (inProcess) {
  // Jobs can arrive while the engine module is still loading its model: keep them until it serves.
  process.on('message', (message: ProcessInit | Job | EventAck) => {
    if (isAck(message)) acknowledge(message);
    else if (init) {
      const first = message as ProcessInit;
      processData = first.data;
      init(first);
      init = undefined;
    } else if (onJob) onJob(message as Job);
    else early.push(message as Job);
  });
  // The parent is gone (it exited or crashed): nothing is left to serve.
  process.on('disconnect', () => process.exit(0));
}

/** The runner process's init message (resolves once the parent sent it). */
export function processInit(): Promise<ProcessInit> {
  return initialised;
}

/** The data the session was created with (a thread's workerData, or the runner's init data). */
export function engineData<T>(): T {
  return (inProcess ? processData : workerData) as T;
}

/** Whole-buffer typed arrays at the top level of a reply: moved to a thread instead of copied. */
function transferables(payload: object): ArrayBuffer[] {
  const out: ArrayBuffer[] = [];
  for (const value of Object.values(payload)) {
    if (ArrayBuffer.isView(value) && ownsItsMemory(value)) out.push(value.buffer);
  }
  return out;
}

function send(reply: object): void {
  // With a callback, a failed send is reported here rather than as an 'error' event on `process`,
  // which unhandled would print a stack to the server's stderr (shared with this runner) and exit 1.
  // It fails when the server is gone (or killed this runner's channel) while a job was running:
  // nobody is left to answer, as on 'disconnect'.
  if (inProcess)
    process.send!(reply, undefined, {}, (err) => {
      if (err) process.exit(0);
    });
  else parentPort!.postMessage(reply, transferables(reply));
}

/**
 * Serves the engine's jobs: each reply carries the job's id and `ok: true` with what `run` returned,
 * or `ok: false` with the error's message and code (failureReply). `emit` sends incremental output of the running job
 * (partial text, say) ahead of its reply; its promise resolves at once while the job's window of
 * unacknowledged events has room, and otherwise once the main side acknowledged enough of them
 * (it does as each is taken: a streamed answer written to its client). An engine that awaits it
 * makes no more than the client takes. Jobs run one at a time unless `concurrent` is set: a
 * runner shared by a model's slots (isolation "model") takes their jobs as they come, and its
 * `run` is async native work (sherpa's decodeAsync, generateAsync on the libuv pool) that may
 * overlap.
 */
export function serveJobs<J extends Job>(
  run: (job: J, emit: (event: object) => Promise<void>) => object | Promise<object>,
  { concurrent = false }: { concurrent?: boolean } = {},
): void {
  const serve = async (job: Job) => {
    const window: Window = { bytes: 0, events: 0, wake: undefined };
    windows.set(job.id, window);
    const emit = (event: object): Promise<void> => {
      const bytes = eventBytes(event);
      window.bytes += bytes;
      window.events += 1;
      send({ id: job.id, event, bytes });
      if (window.bytes <= EMIT_WINDOW_BYTES && window.events <= EMIT_WINDOW_EVENTS) return Promise.resolve();
      return new Promise((resolve) => {
        window.wake = resolve;
      });
    };
    try {
      const result = await run((inProcess ? readBulkSync(job, tmpdir()) : job) as J, emit);
      send(
        inProcess
          ? writeBulkSync({ id: job.id, ok: true, ...result }, tmpdir())
          : { id: job.id, ok: true, ...result },
      );
    } catch (err) {
      send(failureReply(job.id, err));
    } finally {
      windows.delete(job.id);
    }
  };
  let chain = Promise.resolve();
  const handle = concurrent
    ? (job: Job) => void serve(job)
    : (job: Job) => {
        chain = chain.then(() => serve(job));
      };
  if (inProcess) {
    onJob = handle;
    for (const job of early.splice(0)) handle(job);
  } else
    parentPort!.on('message', (message: Job | EventAck) => {
      if (isAck(message)) acknowledge(message);
      else handle(message);
    });
}
