import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  audioPool,
  conformAudioAsync,
  decodeWavAsync,
  PCM16_INLINE_LIMIT,
} from '../../src/audio/audio-pool.js';
import { pcm16Audio } from '../../src/audio/pcm16-audio.js';
import { encodeWav } from '../../src/audio/wav-encode.js';
import { WorkerPool } from '../../src/audio/worker-pool.js';
import { isVoxdError } from '../../src/errors.js';
import { LazyAbort } from '../../src/util/lazy-abort.js';
import type { HeldJob, HeldReply } from '../helpers/held-worker.js';

/** Shared counters the held worker reads and writes: runs so far, and a gate the test opens. */
function cells() {
  return { runs: new Int32Array(new SharedArrayBuffer(4)), gate: new Int32Array(new SharedArrayBuffer(4)) };
}

function heldPool(maxQueue: number) {
  return new WorkerPool<Omit<HeldJob, 'id'>, HeldReply>({
    url: new URL('../helpers/held-worker.js', import.meta.url),
    size: 1,
    maxQueue,
    name: 'test pool',
    failure: () => new Error('never'),
  });
}

/** Node 20 has Atomics.waitAsync; TypeScript's ES2023 library does not declare it yet. */
const waitAsync = (
  Atomics as unknown as { waitAsync(cells: Int32Array, at: number, value: number): { value: unknown } }
).waitAsync;

/** Resolves once the worker has started `count` jobs (it notifies after each). */
async function started(runs: Int32Array, count: number): Promise<void> {
  for (let seen = Atomics.load(runs, 0); seen < count; seen = Atomics.load(runs, 0))
    await waitAsync(runs, 0, seen).value;
}

/**
 * How `promise` stands after one turn of the event loop: a refusal is made at once, so it has
 * settled by then; 'pending' otherwise (without the bound it would wait behind the held thread).
 */
async function settledSoon<T>(promise: Promise<T>): Promise<{ value: T } | { error: unknown } | 'pending'> {
  const pending = new Promise<'pending'>((resolve) => setImmediate(() => resolve('pending')));
  return Promise.race([
    promise.then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    ),
    pending,
  ]);
}

function open(gate: Int32Array): void {
  Atomics.store(gate, 0, 1);
  Atomics.notify(gate, 0);
}

test('a queued job whose signal aborts before a thread takes it never runs and rejects with the reason; a full queue refuses with E_QUEUE_FULL', async () => {
  const pool = heldPool(1);
  const { runs, gate } = cells();
  try {
    const first = pool.run({ runs, gate, tag: 'first' });
    await started(runs, 1);
    const left = new AbortController();
    const queued = pool.run({ runs, tag: 'left' }, { signal: left.signal });
    assert.equal(pool.queued, 1);

    const refused = await settledSoon(pool.run({ runs, tag: 'one too many' }));
    assert.ok(refused !== 'pending' && 'error' in refused, 'a job past maxQueue is refused at once');
    const err = refused.error;
    assert.ok(isVoxdError(err) && err.code === 'E_QUEUE_FULL');
    assert.match(err.message, /test pool is busy: 1 jobs wait for its 1 threads \(its queue holds 1\)/);

    const reason = new Error('client gone');
    left.abort(reason);
    assert.equal(pool.queued, 0, 'the aborted job left the queue');
    await assert.rejects(queued, (err: unknown) => err === reason);

    // Its place is free again: the next job queues, and runs once the thread is.
    const next = pool.run({ runs, tag: 'next' });
    open(gate);
    assert.equal((await first).tag, 'first');
    assert.equal((await next).tag, 'next');
    assert.equal(Atomics.load(runs, 0), 2, 'the aborted job never ran');
  } finally {
    open(gate);
    await pool.close();
  }
});

test('a job whose caller already left is refused without running; a LazyAbort signal works as an AbortSignal does', async () => {
  const pool = heldPool(4);
  const { runs, gate } = cells();
  try {
    const gone = new AbortController();
    gone.abort(new Error('gone'));
    const refused = await settledSoon(pool.run({ runs, tag: 'gone' }, { signal: gone.signal }));
    assert.ok(refused !== 'pending' && 'error' in refused && refused.error === gone.signal.reason);
    const first = pool.run({ runs, gate, tag: 'first' });
    await started(runs, 1);
    const lazy = new LazyAbort();
    const queued = pool.run({ runs, tag: 'lazy' }, { signal: lazy });
    lazy.abort(new Error('run cancelled'));
    assert.equal(pool.queued, 0);
    await assert.rejects(queued, /run cancelled/);
    open(gate);
    await first;
    assert.equal(Atomics.load(runs, 0), 1);
  } finally {
    open(gate);
    await pool.close();
  }
});

test("the audio pool takes the caller's signal: a long decode or resample whose request already left never goes to a thread", async () => {
  // Past PCM16_INLINE_LIMIT, so even 16-bit PCM is decoded on a thread.
  const wav = encodeWav(pcm16Audio(new Int16Array(PCM16_INLINE_LIMIT / 2 + 1), 16000, 1));
  const turn = { samples: new Float32Array(5 * 24000), sampleRate: 24000, channels: 1 };
  const before = audioPool.offloaded;
  const gone = new AbortController();
  gone.abort(new Error('client gone'));
  await assert.rejects(decodeWavAsync(wav, false, gone.signal), /client gone/);
  await assert.rejects(
    conformAudioAsync(turn, { sampleRate: 16000, channels: 1 }, gone.signal),
    /client gone/,
  );
  assert.equal(audioPool.offloaded, before, 'nothing went to a thread');
  // The same calls without the signal do go to a thread (so the count above could have moved).
  await decodeWavAsync(wav);
  await conformAudioAsync(turn, { sampleRate: 16000, channels: 1 });
  assert.equal(audioPool.offloaded, before + 2);
});

test('a job that cannot be sent to a thread (not cloneable) fails alone: the thread stays free for the next job', async () => {
  const pool = heldPool(4);
  const { runs } = cells();
  try {
    // A function cannot cross a thread boundary: postMessage throws before anything is sent.
    const unsendable = { runs, tag: 'unsendable', call: () => 0 } as unknown as Omit<HeldJob, 'id'>;
    await assert.rejects(pool.run(unsendable), { name: 'DataCloneError' });
    // Without the fix the one thread stayed busy with the failed job, and this waited for good.
    assert.equal((await pool.run({ runs, tag: 'next' })).tag, 'next');
    assert.equal(Atomics.load(runs, 0), 1);
  } finally {
    await pool.close();
  }
});
