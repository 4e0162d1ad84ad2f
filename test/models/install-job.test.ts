/**
 * The install job's edge table, pair by pair (as test/runtime/model-state.test.ts has it for a
 * model): a job runs, may be stopped, and ends once; nothing leaves an ended state, `idle` is never
 * entered or left, and moveJob refuses any other edge instead of writing it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { canMoveJob, type JobState, moveJob, newJob } from '../../src/models/install-job.js';

const STATES: readonly JobState[] = [
  'idle',
  'queued',
  'running',
  'cancelling',
  'cancelled',
  'complete',
  'failed',
];
const ALLOWED = new Set([
  'queued->running',
  'queued->cancelling',
  'queued->cancelled',
  'queued->failed',
  'running->cancelling',
  'running->cancelled',
  'running->complete',
  'running->failed',
  'cancelling->cancelled',
  'cancelling->complete',
  'cancelling->failed',
]);

test('canMoveJob allows exactly the job edges; moveJob refuses the others and leaves the job as it was', () => {
  for (const from of STATES)
    for (const to of STATES) {
      const edge = `${from}->${to}`;
      assert.equal(canMoveJob(from, to), ALLOWED.has(edge), edge);
      const job = { ...newJob('x', 'queued', 'queued', 0), state: from };
      if (ALLOWED.has(edge)) {
        moveJob(job, to);
        assert.equal(job.state, to);
      } else {
        assert.throws(() => moveJob(job, to), new RegExp(`from ${from} to ${to}`));
        assert.equal(job.state, from);
      }
    }
});
