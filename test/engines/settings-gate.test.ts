/**
 * SettingsGate: calls under the applied settings run together; other settings are applied only
 * when nothing runs, in arrival order. Each call's work is a promise the test resolves (a gate), so
 * the orderings are forced, not hoped for.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SettingsGate } from '../../src/engines/settings-gate.js';
import { deferred } from '../../src/util/wait.js';

function harness() {
  const log: string[] = [];
  let applied = 'loaded';
  const gate = new SettingsGate<string>((settings) => {
    if (settings === 'refused') throw new Error('setConfig refused');
    log.push(`apply ${settings}`);
    applied = settings;
  }, 'loaded');
  /** Starts a call under `settings`; it runs until its `finish` is called. */
  const call = (name: string, settings: string) => {
    const work = deferred<void>();
    const done = gate.run(settings, settings, async () => {
      log.push(`start ${name} under ${applied}`);
      await work.promise;
      log.push(`end ${name}`);
      return name;
    });
    return { done, finish: () => work.resolve() };
  };
  return { log, call };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

test('calls under the applied settings run at once, together', async () => {
  const { log, call } = harness();
  const a = call('a', 'loaded');
  const b = call('b', 'loaded');
  await settle();
  assert.deepEqual(log, ['start a under loaded', 'start b under loaded']);
  b.finish();
  a.finish();
  assert.deepEqual(await Promise.all([a.done, b.done]), ['a', 'b']);
});

test('other settings wait until the running calls end, and later calls wait behind them', async () => {
  const { log, call } = harness();
  const a = call('a', 'loaded');
  const b = call('b', 'loaded');
  const fr = call('fr', 'fr');
  // Same settings as those applied, but after a call that waits: it must not overtake it.
  const c = call('c', 'loaded');
  await settle();
  assert.deepEqual(log, ['start a under loaded', 'start b under loaded']);
  a.finish();
  await settle();
  assert.deepEqual(log.slice(2), ['end a'], 'b still runs: nothing is applied yet');
  b.finish();
  await settle();
  assert.deepEqual(log.slice(3), ['end b', 'apply fr', 'start fr under fr']);
  fr.finish();
  await settle();
  assert.deepEqual(log.slice(6), ['end fr', 'apply loaded', 'start c under loaded']);
  c.finish();
  assert.deepEqual(await Promise.all([a.done, b.done, fr.done, c.done]), ['a', 'b', 'fr', 'c']);
});

test('settings the engine refuses fail that call only; the others run under what was applied', async () => {
  const { log, call } = harness();
  const bad = call('bad', 'refused');
  const next = call('next', 'loaded');
  await assert.rejects(bad.done, /setConfig refused/);
  await settle();
  assert.deepEqual(log, ['start next under loaded']);
  next.finish();
  assert.equal(await next.done, 'next');
});
