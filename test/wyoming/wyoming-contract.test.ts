/**
 * Wyoming exchanges under the behaviour contract, each the Wyoming variant of a request's cell: an
 * exchange is a request to its model's FIFO like any other. Ten exchanges at once on two slots are
 * admitted in arrival order; an exchange that arrives after a queued reconfiguration waits for it
 * and runs on the new load. Each exchange names its language, which the fixture records at its
 * start, so the record says which ran when. Orderings are forced with gates, never sleeps.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fixtureModel, post, type TestServer, waitUntil, whenRuntime, withServer } from '../helpers/voxd.js';
import { WyomingClient } from '../helpers/wyoming.js';

const FORMAT = { rate: 16000, width: 2, channels: 1 };
const snapshot = (s: TestServer, id: string) => s.voxd.runtime.get(id).scheduler.snapshot();

/** One transcription on a fresh connection, its language naming it. */
async function transcription(s: TestServer, language: string) {
  const c = await WyomingClient.open(s.voxd.wyoming!.port);
  c.send('transcribe', { name: 'asr', language });
  c.send('audio-start', FORMAT);
  c.send('audio-chunk', FORMAT, Buffer.alloc(3200));
  c.send('audio-stop');
  return c;
}

/** Registers `asr` with `slots`, its runs waiting on `gate`. */
async function gatedAsr(s: TestServer, gate: string, slots: number, extra: Record<string, unknown> = {}) {
  const res = await post(
    s.url,
    '/v1/models/load',
    fixtureModel('asr', { task: 'asr', slots, default_request_options: { run_gate: gate }, ...extra }),
  );
  assert.equal(res.status, 200, res.body.toString());
}

test('[order.request-request] ten Wyoming exchanges at once on two slots are admitted in arrival order', async () => {
  await withServer({ wyoming_port: 0, ui_management: true, models: [] }, { parallel: true }, async (s) => {
    const gate = s.gate('runs');
    await gatedAsr(s, gate.path, 2);
    const clients: WyomingClient[] = [];
    for (let i = 0; i < 10; i++) {
      clients.push(await transcription(s, `l${i}`));
      // Each arrives before the next is sent: the arrival order is the order here.
      await whenRuntime(s.voxd.runtime, `exchange ${i} is admitted or queued`, () => {
        const { activeRequests, queuedRequests } = snapshot(s, 'asr');
        return activeRequests + queuedRequests === i + 1;
      });
    }
    assert.equal(snapshot(s, 'asr').activeRequests, 2, 'two run, eight wait');
    await gate.open();
    for (const c of clients) await c.next('transcript');
    const starts = s.fixture.record.of('asr', 'run-start') as unknown as { language: string }[];
    assert.deepEqual(
      starts.map((e) => e.language),
      Array.from({ length: 10 }, (_, i) => `l${i}`),
    );
    await Promise.all(clients.map((c) => c.close()));
  });
});

test('[order.manager-request] a Wyoming exchange that arrives after a queued reconfiguration waits for it and runs on the new load', async () => {
  await withServer({ wyoming_port: 0, ui_management: true, models: [] }, { parallel: true }, async (s) => {
    const gate = s.gate('first');
    await gatedAsr(s, gate.path, 1);
    const first = await transcription(s, 'before');
    await waitUntil('the first runs', () => s.fixture.record.of('asr', 'run-start').length === 1);
    // The reconfiguration queues behind the running exchange; the next exchange behind it.
    const reconfigure = post(
      s.url,
      '/v1/models/load',
      fixtureModel('asr', { task: 'asr', slots: 1, load_options: { tag: 'new' } }),
    );
    await whenRuntime(
      s.voxd.runtime,
      'the reconfiguration queues',
      () => snapshot(s, 'asr').queuedManagers === 1,
    );
    const second = await transcription(s, 'after');
    await whenRuntime(
      s.voxd.runtime,
      'the exchange queues behind it',
      () => snapshot(s, 'asr').queuedRequests === 1,
    );
    await gate.open();
    await first.next('transcript');
    assert.equal((await reconfigure).status, 200);
    await second.next('transcript');
    const starts = s.fixture.record.of('asr', 'run-start') as unknown as {
      language: string;
      generation: number;
    }[];
    assert.deepEqual(
      starts.map((e) => [e.language, e.generation]),
      [
        ['before', 1],
        ['after', 2],
      ],
    );
    await Promise.all([first.close(), second.close()]);
  });
});
