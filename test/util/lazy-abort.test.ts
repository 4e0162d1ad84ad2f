import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LazyAbort } from '../../src/util/lazy-abort.js';

describe('LazyAbort', () => {
  test('aborts once: listeners in order, then the signal, with the same reason', () => {
    const abort = new LazyAbort();
    const signal = abort.signal;
    const calls: string[] = [];
    abort.addEventListener('abort', () => calls.push('first'));
    abort.addEventListener('abort', () => calls.push('second'));
    signal.addEventListener('abort', () => calls.push('signal'));
    assert.equal(abort.aborted, false);
    assert.doesNotThrow(() => abort.throwIfAborted());
    const reason = new Error('gone');
    abort.abort(reason);
    abort.abort(new Error('again'));
    assert.deepEqual(calls, ['first', 'second', 'signal']);
    assert.equal(abort.aborted, true);
    assert.equal(abort.reason, reason);
    assert.equal(signal.reason, reason);
    assert.throws(() => abort.throwIfAborted(), reason);
  });

  test('a signal asked for after the abort is already aborted', () => {
    const abort = new LazyAbort();
    abort.abort('why');
    assert.equal(abort.signal.aborted, true);
    assert.equal(abort.signal.reason, 'why');
  });

  test('removed listeners, listeners added twice and listeners added after the abort', () => {
    const abort = new LazyAbort();
    let calls = 0;
    const count = () => calls++;
    const removed = () => assert.fail('a removed listener was called');
    abort.addEventListener('abort', count);
    abort.addEventListener('abort', count);
    abort.addEventListener('abort', removed);
    abort.removeEventListener('abort', removed);
    abort.abort('why');
    abort.addEventListener('abort', removed);
    assert.equal(calls, 1);
  });

  test('a listener removed by an earlier one is not called', () => {
    const abort = new LazyAbort();
    const later = () => assert.fail('called after its removal');
    abort.addEventListener('abort', () => abort.removeEventListener('abort', later));
    abort.addEventListener('abort', later);
    abort.abort('why');
  });
});
