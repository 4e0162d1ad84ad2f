/** An engine module for the EngineWorker tests: it runs in a thread or a runner process alike. */
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { isMainThread } from 'node:worker_threads';
import { engineData, serveJobs } from '../../../src/engines/engine-port.js';

export interface TestJob {
  id: number;
  op: 'echo' | 'crash' | 'hang' | 'where' | 'throw-later' | 'block-until' | 'emit';
  samples?: Float32Array;
  /** echo: returned as it came. */
  pcm?: Int16Array;
  /** emit: this many events of `bytes` bytes each, each awaited (the engine's backpressure). */
  count?: number;
  bytes?: number;
  /**
   * block-until: the file whose existence ends the block (`<gate>.started` is made when it begins);
   * throw-later: the file whose existence makes the engine throw.
   */
  gate?: string;
}

const data = engineData<{ loadMs: number; tag: string; concurrent?: boolean }>();
// A slow "model load": jobs sent meanwhile must wait for it, not be lost.
await sleep(data.loadMs);

serveJobs(
  async (job: TestJob, emit) => {
    switch (job.op) {
      case 'emit':
        for (let i = 0; i < job.count!; i++) await emit({ i, samples: new Float32Array(job.bytes! / 4) });
        return { emitted: job.count };
      case 'echo':
        return {
          tag: data.tag,
          samples: Float32Array.from(job.samples ?? [], (x) => x * 2),
          ...(job.pcm ? { pcm: job.pcm } : {}),
        };
      case 'where':
        // `files`: what the runner's temporary folder holds (a process runner's own).
        return { pid: process.pid, mainThread: isMainThread, files: readdirSync(tmpdir()) };
      case 'crash':
        process.kill(process.pid, 'SIGSEGV');
        return {};
      case 'throw-later': {
        // Engine code failing after its reply, once the test has its answer (the gate file): the
        // reply and the thread's error travel on different ports, so only the gate orders them.
        const poll = setInterval(() => {
          if (!existsSync(job.gate!)) return;
          clearInterval(poll);
          throw new Error('thrown after the reply');
        }, 5);
        return {};
      }
      case 'block-until':
        // Blocking like a native call, so nothing (not even the channel closing) is seen until it ends.
        writeFileSync(`${job.gate}.started`, '');
        while (!existsSync(job.gate!)) {}
        return {};
      case 'hang':
        // Stuck like a native call: no await, nothing the event loop could interrupt.
        for (;;) {}
    }
  },
  // A shared runner (isolation "model") serves its slots' jobs as they come.
  { concurrent: data.concurrent === true },
);
