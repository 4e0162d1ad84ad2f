/**
 * Residency on its own: max_loaded_models evicts the least recently used idle model and never
 * waits for a busy one, min_free_memory_mb refuses a load that would leave too little, loads are
 * one at a time while a limit is on, and the idle sweep retires only idle models (manual clock).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ModelEntry } from '../../src/runtime/model-entry.js';
import type { Pool } from '../../src/runtime/model-state.js';
import { Residency, type ResidencyOptions } from '../../src/runtime/residency.js';
import { ManualClock, withDeadline } from '../helpers/voxd.js';
import { deferred, type Script, scriptedEntry } from './scripted-family.js';

const MB = 1024 * 1024;

/** Entries whose loads go through one Residency, as the runtime wires them. */
function setup(options: Partial<ResidencyOptions> = {}, scripts: Record<string, Script> = {}) {
  const clock = new ManualClock();
  const entries: ModelEntry[] = [];
  const logs: string[] = [];
  const residency = new Residency({
    maxLoadedModels: 0,
    minFreeMemoryMb: 0,
    idleUnloadMs: 0,
    clock,
    freeMemoryMb: async () => 8000,
    entries: () => entries,
    log: (message) => logs.push(message),
    shutdownSignal: new AbortController().signal,
    ...options,
  });
  const add = (id: string) => {
    const made = scriptedEntry(id, {
      clock,
      script: scripts[id] ?? {},
      admitLoad: (entry: ModelEntry, build: () => Promise<Pool>) => residency.admitLoad(entry, build),
    });
    entries.push(made.entry);
    return made;
  };
  return { residency, clock, logs, add };
}

test('unguarded, a load is just built; guarded by max_loaded_models=2, a third load evicts the least recently used', async () => {
  const open = setup();
  const free = open.add('a');
  await free.entry.ensureReady();
  assert.equal(open.residency.guarded, false);

  const { add, clock, logs } = setup({ maxLoadedModels: 2 });
  const a = add('a');
  const b = add('b');
  const c = add('c');
  await a.entry.ensureReady();
  clock.advance(10);
  await b.entry.ensureReady();
  clock.advance(10);
  a.entry.touch(); // a is now the most recent: b is the victim
  await c.entry.ensureReady();
  assert.deepEqual([a.entry.loaded, b.entry.loaded, c.entry.loaded], [true, false, true]);
  assert.ok(b.family.events.includes('dispose weights'), 'the victim was torn down');
  assert.deepEqual(logs, ["evicted model 'b' to load 'c' (max_loaded_models=2)"]);
});

test('a busy model is never a victim: with every loaded model busy the load fails at once, and nothing was unloaded', async () => {
  const { add } = setup({ maxLoadedModels: 1 });
  const a = add('a');
  const b = add('b');
  await a.entry.ensureReady();
  // A request holds a's slot: the eviction may only try-acquire it.
  const lease = await a.entry.scheduler.acquire('request', { timeoutMs: 0 });
  await assert.rejects(
    b.entry.ensureReady(),
    /cannot load model 'b': max_loaded_models=1 and every loaded model is busy; retry later/,
  );
  assert.equal(a.entry.loaded, true);
  assert.equal(b.entry.state.kind, 'unloaded');
  lease.release();
  await b.entry.ensureReady();
  assert.deepEqual([a.entry.loaded, b.entry.loaded], [false, true], 'idle again, a can go');
});

test('min_free_memory_mb refuses a load that would leave too little, names the figures, and skips a model of unknown size', async () => {
  const { add, logs } = setup(
    { minFreeMemoryMb: 1000, freeMemoryMb: async () => 1500 },
    { big: { footprint: 800 * MB }, small: { footprint: 100 * MB }, unknown: {} },
  );
  const big = add('big');
  await assert.rejects(
    big.entry.ensureReady(),
    /cannot load model 'big': 1500 MB free, the model needs about 800 MB and min_free_memory_mb=1000 must stay free/,
  );
  assert.equal(big.family.loads, 0, 'refused before loading anything');
  await add('small').entry.ensureReady();
  await add('unknown').entry.ensureReady();
  assert.ok(logs.includes("model 'unknown': footprint unknown, memory guard skipped"));
});

/** Lets every promise chain that can run now run (a macrotask turn), so what has not started is waiting. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

for (const guarded of [true, false])
  test(`cold loads ${guarded ? 'take turns while a limit is on' : 'run at once without a limit'}`, async () => {
    const gate = deferred();
    const { add } = setup({ maxLoadedModels: guarded ? 4 : 0 }, { a: { loadGate: gate.promise } });
    const a = add('a');
    const b = add('b');
    const first = a.entry.ensureReady();
    await a.family.reached('load');
    const second = b.entry.ensureReady();
    await settle();
    // Guarded, b waits for the guard, not for a's gate: it has not begun to load.
    assert.equal(b.family.loads, guarded ? 0 : 1);
    gate.resolve();
    await first;
    await second;
    assert.equal(b.family.loads, 1);
  });

test('the idle sweep retires models idle for idle_unload_ms, skips busy and recent ones, and a second call joins the running sweep', async () => {
  const { add, clock, residency, logs } = setup({ idleUnloadMs: 1000 });
  const idle = add('idle');
  const busy = add('busy');
  const recent = add('recent');
  for (const m of [idle, busy, recent]) await m.entry.ensureReady();
  clock.advance(1000);
  recent.entry.touch();
  const lease = await busy.entry.scheduler.acquire('request', { timeoutMs: 0 });
  const sweeps = Promise.all([residency.sweepIdle(), residency.sweepIdle()]);
  await settle();
  // A sweep only try-acquires: one that waited in line behind busy's request would hang, and
  // would keep every later request to busy out behind its barrier meanwhile.
  assert.equal(busy.entry.scheduler.snapshot().queuedManagers, 0, 'the sweep does not queue on a busy model');
  const [first, overlapping] = await withDeadline(
    sweeps,
    'the sweep, which never waits for a busy model',
    5000,
  );
  assert.deepEqual(first, ['idle']);
  assert.deepEqual(overlapping, ['idle'], 'a sweep already running is joined, not doubled');
  assert.deepEqual([idle.entry.loaded, busy.entry.loaded, recent.entry.loaded], [false, true, true]);
  assert.deepEqual(logs, ['idle 1000 ms: unloaded 1 model(s): idle']);
  lease.release();
  clock.advance(1000);
  assert.deepEqual((await residency.sweepIdle()).sort(), ['busy', 'recent']);
});
