/**
 * A live input fed from outside (a realtime turn's or a Wyoming utterance's audio) ends its run when
 * the run is cancelled, even though nobody ends or fails the feed: the client leaving, and
 * max_inference_ms, each free the slot. Before, `for await` over the feed waited for its next piece
 * for ever and the slot stayed held until restart (probe 2026-12, F1/F2).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Audio } from '../../src/audio/types.js';
import { VoxdError } from '../../src/errors.js';
import { PushQueue } from '../../src/util/push-queue.js';
import { fixtureModel, startServer } from '../helpers/voxd.js';

const piece = (): Audio => ({ samples: new Float32Array(1600), sampleRate: 16000, channels: 1 });

test('a live input never ended: the client leaving ends the run and frees the slot', async () => {
  const s = await startServer({ models: [fixtureModel('m', { lazy: false })] });
  try {
    const { runtime } = s.voxd;
    const feed = new PushQueue<Audio>();
    feed.push(piece());
    const gone = new AbortController();
    const run = runtime.infer('m', { task: 'asr', liveAudio: feed, options: {} }, { signal: gone.signal });
    const active = () => runtime.get('m').scheduler.snapshot().activeRequests;
    // The run takes its slot within a few turns of the event loop (no load: the model is warm).
    for (let turn = 0; turn < 100 && active() === 0; turn++) await new Promise(setImmediate);
    assert.equal(active(), 1, 'the live run holds its slot');
    gone.abort(new VoxdError('E_CLIENT_GONE', 'the client left'));
    await assert.rejects(run, (err: unknown) => err instanceof VoxdError && err.code === 'E_CLIENT_GONE');
    assert.equal(runtime.get('m').scheduler.idle, true, 'the slot is given back');
  } finally {
    await s.close();
  }
});

test('a live input never ended: max_inference_ms ends the run with its 504', async () => {
  const s = await startServer({ max_inference_ms: 50, models: [fixtureModel('m', { lazy: false })] });
  try {
    const { runtime } = s.voxd;
    const feed = new PushQueue<Audio>();
    feed.push(piece());
    const run = runtime.infer(
      'm',
      { task: 'asr', liveAudio: feed, options: {} },
      { signal: new AbortController().signal },
    );
    await assert.rejects(
      run,
      (err: unknown) => err instanceof VoxdError && err.code === 'E_INFERENCE_TIMEOUT',
    );
    assert.equal(runtime.get('m').scheduler.idle, true);
  } finally {
    await s.close();
  }
});
