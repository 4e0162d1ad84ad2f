import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Changes } from '../../src/util/changes.js';

const turn = () => new Promise((resolve) => setImmediate(resolve));

test('when() resolves at once when the condition already holds', async () => {
  const changes = new Changes();
  let resolved = false;
  void changes
    .when(() => true)
    .then(() => {
      resolved = true;
    });
  await turn();
  assert.equal(resolved, true);
});

test('when() resolves on the first change after which the condition holds, not before, and only once', async () => {
  const changes = new Changes();
  let value = 0;
  let checks = 0;
  let resolved = false;
  void changes
    .when(() => {
      checks++;
      return value === 2;
    })
    .then(() => {
      resolved = true;
    });
  value = 1;
  changes.notify();
  await turn();
  assert.equal(resolved, false, 'a change after which it does not hold');
  value = 2;
  await turn();
  assert.equal(resolved, false, 'no change was reported: nothing is checked on a timer');
  changes.notify();
  await turn();
  assert.equal(resolved, true);
  const before = checks;
  changes.notify();
  assert.equal(checks, before, 'the listener left once its condition held');
});

test('an aborted wait rejects with the reason and leaves no listener', async () => {
  const changes = new Changes();
  const stop = new AbortController();
  let checks = 0;
  const waiting = changes.when(() => {
    checks++;
    return false;
  }, stop.signal);
  stop.abort(new Error('gave up'));
  await assert.rejects(waiting, /gave up/);
  const before = checks;
  changes.notify();
  assert.equal(checks, before);
  assert.throws(
    () => changes.when(() => false, stop.signal),
    /gave up/,
    'an aborted signal is refused at once',
  );
});

test('listeners that resolve during a notify do not disturb the others', async () => {
  const changes = new Changes();
  let open = false;
  const all = Promise.all([1, 2, 3].map(() => changes.when(() => open)));
  open = true;
  changes.notify();
  await all;
});
