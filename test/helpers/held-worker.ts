/**
 * A worker for WorkerPool tests: each job adds one to `runs` (shared memory the test reads), then
 * blocks until the test opens `gate` (when it has one), so the test decides when the thread is free.
 */
import { parentPort } from 'node:worker_threads';

export type HeldJob = { id: number; runs: Int32Array; gate?: Int32Array; tag: string };
export type HeldReply = { id: number; ok: true; tag: string };

parentPort?.on('message', (job: HeldJob) => {
  Atomics.add(job.runs, 0, 1);
  Atomics.notify(job.runs, 0);
  if (job.gate) Atomics.wait(job.gate, 0, 0);
  parentPort!.postMessage({ id: job.id, ok: true, tag: job.tag } satisfies HeldReply);
});
