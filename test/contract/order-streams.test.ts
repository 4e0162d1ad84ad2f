/**
 * [order.request-manager] for streamed responses and batches: a manager waits for every stream
 * and batch admitted or queued before it (each holds its leases to its last byte), and a request
 * that arrives after the manager runs only after it, at 1, 2 and 4 slots.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sseEvents } from '../helpers/sse.js';
import { post } from '../helpers/voxd.js';
import { COUNTS, queued, readyView, view } from './assertions.js';
import { withContractServer } from './harness.js';

const events = sseEvents;

describe('arrival order: streams and batches, then a manager', () => {
  for (const n of COUNTS) {
    test(`[order.request-manager] slots=${n}: an unload waits for the running streams and the queued batch; a later request runs after it`, async () => {
      await withContractServer([{ id: 'M', slots: n, task: 'tts', mode: 'streaming' }], async (c) => {
        await c.ready('M');
        const gate = await c.runGate();
        // Every slot held by a stream that is still running (its engine run waits on the gate).
        const streams = Array.from({ length: n }, () =>
          post(c.url, '/v1/audio/speech', {
            model: 'M',
            input: 'held',
            stream: true,
            options: { run_gate: gate.path, chunks: 2 },
          }),
        );
        await c.waitCount('M', 'run-start', n);
        // A batch of n + 1 requests queues for the model's slots; then the manager, then a late request.
        const batch = post(c.url, '/v1/tasks/batch', {
          model: 'M',
          requests: Array.from({ length: n + 1 }, (_, i) => ({ text: `item ${i}` })),
        });
        await queued(c, 'M', n);
        const manager = c.unload('M');
        await queued(c, 'M', n, 1);
        const late = post(c.url, '/v1/audio/speech', { model: 'M', input: 'late', stream: true });
        await queued(c, 'M', n + 1, 1);
        assert.deepEqual(await view(c, 'M'), { ...readyView(n), active_slots: n, queued_requests: n + 1 });

        await gate.open();
        for (const res of await Promise.all(streams)) assert.equal(events(res.body).at(-1), '[DONE]');
        const batched = events((await batch).body);
        assert.equal(batched.at(-1), '[DONE]');
        assert.equal(
          batched.filter((e) => e !== '[DONE]' && e.type === 'task.batch.result' && !('error' in e)).length,
          n + 1,
        );
        assert.equal((await manager).status, 200);
        assert.equal(events((await late).body).at(-1), '[DONE]');

        // Every run of generation 1 (the streams and the whole batch) ended before the unload's
        // first step; the late stream ran on generation 2, after it.
        const all = c.events('M');
        const firstTeardown = all.findIndex((e) => e.type === 'session-disposed');
        const runsOf = (generation: number) =>
          all.filter((e) => e.type === 'run-end' && e.generation === generation).map((e) => all.indexOf(e));
        assert.equal(runsOf(1).length, n + n + 1, 'n streams and n + 1 batch items on the first pool');
        assert.ok(
          runsOf(1).every((i) => i < firstTeardown),
          'no stream or batch item of the old pool ran after the unload began',
        );
        assert.equal(runsOf(2).length, 1, 'the late stream ran on the reloaded pool');
        assert.ok(runsOf(2)[0]! > firstTeardown);
      });
    });
  }
});
