/**
 * A failed run gives its slot back before its answer leaves: right after a 500 (the engine threw
 * mid-run) or a failure before the run started, the model is idle at once, with no wait. A lease
 * kept on an error path would otherwise show only as the next request hanging (busy_timeout_ms 0
 * waits without limit), stalling the suite instead of failing a named test.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fixtureModel, runTask, startServer } from '../helpers/voxd.js';

for (const [failure, options] of [
  ['run_fail (the engine threw mid-run)', { run_fail: 'true' }],
  ['prepare_fail (before the run started)', { prepare_fail: 'true' }],
] as const) {
  test(`after ${failure}: the model is idle as the answer arrives, and serves the next request`, async () => {
    const s = await startServer({ busy_timeout_ms: 0, models: [fixtureModel('m', { lazy: false })] });
    try {
      const scheduler = () => s.voxd.runtime.get('m').scheduler;
      for (let round = 0; round < 3; round++) {
        const failed = await runTask(s, 'm', options);
        assert.notEqual(failed.status, 200, failed.body.toString());
        assert.equal(scheduler().idle, true, `round ${round}: no lease, waiter or manager left`);
        assert.deepEqual(
          [scheduler().snapshot().activeRequests, scheduler().snapshot().queuedRequests],
          [0, 0],
        );
      }
      assert.equal((await runTask(s, 'm', {})).status, 200);
      assert.equal(scheduler().idle, true);
    } finally {
      await s.close();
    }
  });
}
