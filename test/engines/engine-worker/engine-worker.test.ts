import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { EMIT_WINDOW_BYTES, EMIT_WINDOW_EVENTS, eventBytes } from '../../../src/engines/engine-port.js';
import { EngineWorker, type RunnerKind } from '../../../src/engines/engine-worker.js';
import { waitUntil, withDeadline } from '../../helpers/voxd.js';
import type { TestJob } from './test-engine.js';

const ENGINE = new URL('./test-engine.js', import.meta.url);

type Reply =
  | {
      id: number;
      ok: true;
      tag?: string;
      samples?: Float32Array;
      pcm?: Int16Array;
      files?: string[];
      pid?: number;
      mainThread?: boolean;
      emitted?: number;
    }
  | { id: number; ok: false; message: string };

const start = (isolation: RunnerKind, loadMs = 0) =>
  new EngineWorker<Omit<TestJob, 'id'>, Reply>(ENGINE, { loadMs, tag: 'model-a' }, isolation);
const never = () => new AbortController().signal;
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
async function where(worker: ReturnType<typeof start>) {
  const reply = await worker.call({ op: 'where' }, never());
  assert.ok(reply.ok);
  return reply;
}

for (const isolation of ['thread', 'process'] as const) {
  describe(`EngineWorker (${isolation})`, () => {
    test('large arrays (5 s of audio and more) reach the engine and come back whole, and leave no file behind', async () => {
      const worker = start(isolation);
      try {
        const samples = Float32Array.from({ length: 200_000 }, (_, i) => Math.sin(i / 7));
        const pcm = Int16Array.from({ length: 80_000 }, (_, i) => ((i * 37) % 65536) - 32768);
        const reply = await worker.call({ op: 'echo', samples, pcm }, never());
        assert.ok(reply.ok && reply.samples && reply.pcm, JSON.stringify(reply).slice(0, 200));
        assert.ok(reply.samples instanceof Float32Array && reply.pcm instanceof Int16Array);
        assert.deepEqual(
          reply.samples,
          Float32Array.from(samples, (x) => x * 2),
        );
        assert.deepEqual(reply.pcm, pcm);
        if (isolation === 'process') assert.deepEqual((await where(worker)).files, [], 'no file left');
        // A job the channel cannot carry (a function) fails its call, large arrays or not; the runner goes on.
        const unsendable = { op: 'echo', samples, send: () => 1 } as unknown as Omit<TestJob, 'id'>;
        await assert.rejects(worker.call(unsendable, never()), /could not be cloned/);
        assert.ok((await worker.call({ op: 'echo', samples: new Float32Array([1]) }, never())).ok);
      } finally {
        await worker.dispose();
      }
    });

    test("many calls in flight share the runner's one listener set: each gets its own reply, no listener leak", async () => {
      const worker = start(isolation);
      const warnings: string[] = [];
      const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
      process.on('warning', onWarning);
      try {
        const calls = Array.from({ length: 40 }, (_, i) =>
          worker.call({ op: 'echo', samples: new Float32Array([i]) }, never()),
        );
        const replies = await Promise.all(calls);
        replies.forEach((reply, i) => {
          assert.ok(reply.ok && reply.samples, JSON.stringify(reply));
          assert.deepEqual([...reply.samples], [2 * i]);
        });
        // A warning is emitted on a later tick.
        await new Promise((resolve) => setImmediate(resolve));
        assert.deepEqual(
          warnings.filter((w) => w.startsWith('MaxListenersExceededWarning')),
          [],
          'one listener set per runner, not three listeners per call',
        );
      } finally {
        process.off('warning', onWarning);
        await worker.dispose();
      }
    });

    test('a job sent while the engine is still loading is answered; audio crosses both ways', async () => {
      const worker = start(isolation, 300);
      try {
        const reply = await worker.call({ op: 'echo', samples: new Float32Array([0.25, -0.5]) }, never());
        assert.ok(reply.ok, JSON.stringify(reply));
        assert.equal(reply.tag, 'model-a');
        assert.ok(reply.samples instanceof Float32Array);
        assert.deepEqual([...reply.samples], [0.5, -1]);
        const here = await where(worker);
        assert.equal(here.mainThread, isolation === 'process');
        assert.equal(here.pid === process.pid, isolation === 'thread');
      } finally {
        await worker.dispose();
      }
    });

    // Two jobs at once on one runner (concurrent, as a model's slots share one under isolation
    // "model"): the one whose events are not taken pauses once its window is full, the other runs on.
    for (const [what, bytes, window] of [
      ['small events: the event window', 16, EMIT_WINDOW_EVENTS + 1],
      [
        'large events: the byte window',
        64 * 1024,
        Math.floor(EMIT_WINDOW_BYTES / eventBytes({ i: 0, samples: new Float32Array(16 * 1024) })) + 1,
      ],
    ] as const) {
      test(`emit waits while its events are not taken (${what}); another job on the runner runs on`, async () => {
        const worker = new EngineWorker<Omit<TestJob, 'id'>, Reply>(
          ENGINE,
          { loadMs: 0, tag: 'shared', concurrent: true },
          isolation,
        );
        try {
          let release!: () => void;
          const taken = new Promise<void>((resolve) => {
            release = resolve;
          });
          let full!: () => void;
          const windowFull = new Promise<void>((resolve) => {
            full = resolve;
          });
          let seen = 0;
          const count = window * 3;
          const slow = worker.call({ op: 'emit', count, bytes }, never(), [], () => {
            if (++seen === window) full();
            return taken;
          });
          await withDeadline(windowFull, 'the first window of events', 10_000);
          const fast = await worker.call({ op: 'emit', count, bytes }, never(), [], () => undefined);
          assert.ok(fast.ok && fast.emitted === count, JSON.stringify(fast));
          // The slow job sent its window and no more while its events were not taken.
          assert.equal(seen, window);
          release();
          const reply = await slow;
          assert.ok(reply.ok && reply.emitted === count, JSON.stringify(reply));
          assert.equal(seen, count);
        } finally {
          await worker.dispose();
        }
      });
    }

    test('a cancelled call stops work stuck in a loop; the next call gets a fresh engine', async () => {
      const worker = start(isolation);
      try {
        const before = await where(worker);
        const controller = new AbortController();
        const stuck = worker.call({ op: 'hang' }, controller.signal);
        controller.abort(new Error('client went away'));
        await assert.rejects(stuck, /client went away/);
        if (isolation === 'process')
          await waitUntil('the stuck process was killed', () => !alive(before.pid!));
        const after = await where(worker);
        if (isolation === 'process') assert.notEqual(after.pid, before.pid);
      } finally {
        await worker.dispose();
      }
    });
  });
}

test('EngineWorker (thread): engine code that throws between calls does not end the server; the next call gets a fresh thread', async () => {
  const worker = start('thread');
  const dir = mkdtempSync(join(tmpdir(), 'voxd-engine-worker-'));
  const gate = join(dir, 'gate');
  try {
    assert.ok((await worker.call({ op: 'throw-later', gate }, never())).ok);
    writeFileSync(gate, '');
    // The thread's uncaught error arrives as an 'error' event while no call listens for one.
    await waitUntil('the failed thread was dropped', () => !worker.running);
    assert.equal((await where(worker)).mainThread, false);
  } finally {
    await worker.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});

describe('EngineWorker (process): what a thread cannot survive', () => {
  test('a runner process killed between calls is replaced: the next call does not fail on its closed channel', async () => {
    const worker = start('process');
    try {
      const before = await where(worker);
      process.kill(before.pid!, 'SIGKILL');
      // Reaped by this process, so its 'exit' has been emitted (the kill says ESRCH only after that).
      await waitUntil('the runner is gone', () => !alive(before.pid!));
      const after = await where(worker);
      assert.notEqual(after.pid, before.pid);
    } finally {
      await worker.dispose();
    }
  });

  test('an engine that dies of a native fault fails only its call; the server process lives on', async () => {
    const worker = start('process');
    try {
      const before = await where(worker);
      await assert.rejects(worker.call({ op: 'crash' }, never()), /engine process exited on signal SIGSEGV/);
      const after = await where(worker);
      assert.notEqual(after.pid, before.pid);
    } finally {
      await worker.dispose();
    }
  });

  test('dispose kills the runner process', async () => {
    const worker = start('process');
    const { pid } = await where(worker);
    assert.ok(alive(pid!));
    await worker.dispose();
    assert.equal(alive(pid!), false);
  });

  test('a runner whose server closed the channel during a job exits 0 without a stack on stderr', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'voxd-runner-'));
    const gate = join(dir, 'gate');
    // The runner entry EngineWorker forks, started by hand so the test can close its channel.
    const child = fork(new URL('../../../src/engines/engine-process.js', import.meta.url), [], {
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    let stderr = '';
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      stderr += chunk;
    });
    const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
      child.once('exit', (code, signal) => resolve({ code, signal })),
    );
    try {
      child.send({ url: ENGINE.href, data: { loadMs: 0, tag: 'model-a' } });
      child.send({ id: 1, op: 'block-until', gate });
      await waitUntil('the job is blocking', () => existsSync(`${gate}.started`));
      child.disconnect();
      writeFileSync(gate, '');
      // Its reply now meets a closed channel (EPIPE).
      const exit = await withDeadline(exited, 'the runner to exit', 10_000);
      assert.deepEqual(exit, { code: 0, signal: null }, `stderr:\n${stderr}`);
      assert.equal(stderr, '');
    } finally {
      if (child.exitCode === null && child.signalCode === null) process.kill(child.pid!, 'SIGKILL');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
