import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { floats } from '../../../src/audio/pcm16-audio.js';
import { durationMs } from '../../../src/audio/types.js';
import { decodeWav } from '../../../src/audio/wav-decode.js';
import { errorOf, post, startServer, type TestServer, withServer } from '../../helpers/voxd.js';

const models = [
  { id: 'flite', family: 'flite_tts', task: 'tts', lazy: true },
  { id: 'espeak', family: 'espeak_tts', task: 'tts', lazy: true },
];

const speak = (s: TestServer, body: Record<string, unknown>, signal?: AbortSignal) =>
  post(s.url, '/v1/audio/speech', body, signal);

function audioOf(res: { status: number; body: Buffer }) {
  assert.equal(res.status, 200, res.body.toString('utf8'));
  return decodeWav(res.body);
}

describe('WASM TTS engines (flite_tts, espeak_tts)', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer({ busy_timeout_ms: 0, models });
  });
  after(() => s.close());

  test('flite speaks 16 kHz mono, deterministically, with its built-in voices', async () => {
    const text = 'The quick brown fox jumps over the lazy dog.';
    const first = await speak(s, { model: 'flite', input: text });
    const audio = audioOf(first);
    assert.deepEqual([audio.sampleRate, audio.channels], [16000, 1]);
    assert.ok(durationMs(audio) > 1000 && durationMs(audio) < 6000, `duration ${durationMs(audio)} ms`);
    assert.deepEqual(
      (await speak(s, { model: 'flite', input: text })).body,
      first.body,
      'same input, same bytes',
    );
    const rms = await speak(s, { model: 'flite', input: text, voice: 'rms' });
    assert.notDeepEqual(rms.body, first.body, 'another voice sounds different');
    assert.equal(audioOf(await speak(s, { model: 'flite', input: text, voice: 'kal' })).sampleRate, 8000);
  });

  test('espeak speaks 22.05 kHz mono, deterministically, with variants', async () => {
    const first = await speak(s, { model: 'espeak', input: 'Hello from espeak.' });
    const audio = audioOf(first);
    assert.deepEqual([audio.sampleRate, audio.channels], [22050, 1]);
    assert.deepEqual((await speak(s, { model: 'espeak', input: 'Hello from espeak.' })).body, first.body);
    const female = await speak(s, { model: 'espeak', input: 'Hello from espeak.', voice: 'en-us+f3' });
    assert.notDeepEqual(floats(audioOf(female)), floats(audio));
  });

  test('speed changes the length of the speech', async () => {
    for (const model of ['flite', 'espeak']) {
      const input = 'One two three four five six seven eight nine ten.';
      const normal = durationMs(audioOf(await speak(s, { model, input })));
      const fast = durationMs(audioOf(await speak(s, { model, input, speed: 2 })));
      assert.ok(fast < normal * 0.75, `${model}: ${fast} ms at speed 2 vs ${normal} ms`);
      const bad = await speak(s, { model, input, speed: 10 });
      assert.match(errorOf(bad, 400, 'invalid_request_error'), /speed.*"10"/);
    }
  });

  test('unknown voices, text with nothing to speak: clear 400s', async () => {
    assert.match(
      errorOf(await speak(s, { model: 'flite', input: 'x', voice: 'bob' }), 400, 'invalid_request_error'),
      /voice: "bob".*kal16/,
    );
    assert.match(
      errorOf(await speak(s, { model: 'espeak', input: 'x', voice: '../etc' }), 400, 'invalid_request_error'),
      /voice: "..\/etc"/,
    );
    assert.match(
      errorOf(await speak(s, { model: 'espeak', input: 'x', voice: 'zz-qq' }), 400, 'invalid_request_error'),
      /voice: "zz-qq" is not an espeak-ng voice; use one such as en-us.*alloy/,
    );
    for (const model of ['flite', 'espeak']) {
      assert.match(
        errorOf(await speak(s, { model, input: ' ... ' }), 400, 'invalid_request_error'),
        /nothing|no letters/,
      );
    }
  });

  test('non-ASCII and long text are spoken', async () => {
    for (const model of ['flite', 'espeak']) {
      assert.ok(durationMs(audioOf(await speak(s, { model, input: 'Café, naïve, Zoë — 東京 ✓ 42.' }))) > 300);
      const long = Array.from({ length: 40 }, (_, i) => `This is sentence number ${i + 1}.`).join(' ');
      assert.ok(durationMs(audioOf(await speak(s, { model, input: long }))) > 40_000);
    }
  });

  test('a client that leaves mid-synthesis stops the thread; the model keeps serving', async () => {
    const long = Array.from({ length: 300 }, (_, i) => `Sentence ${i} goes on for a while.`).join(' ');
    const controller = new AbortController();
    const leaving = speak(s, { model: 'espeak', input: long }, controller.signal).catch(
      (err: unknown) => err,
    );
    const entry = s.voxd.runtime.get('espeak');
    const deadline = Date.now() + 10_000;
    while (entry.scheduler.snapshot().activeRequests === 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 5));
    controller.abort();
    await leaving;
    while (entry.scheduler.snapshot().activeRequests > 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 5));
    assert.equal(
      entry.scheduler.snapshot().activeRequests,
      0,
      'the slot was freed without waiting for the long synthesis',
    );
    assert.equal(audioOf(await speak(s, { model: 'espeak', input: 'Still here.' })).sampleRate, 22050);
  });
});

test('outputs are identical in the serial runtime and at 1, 2 and 4 parallel slots', async () => {
  const input = 'Identical bytes whatever the slot count.';
  const outputs: Buffer[] = [];
  for (const slots of [undefined, 'omitted', 1, 2, 4] as const) {
    const parallel = slots !== undefined;
    const withSlots = models.map((m) => (typeof slots === 'number' ? { ...m, slots } : m));
    await withServer({ busy_timeout_ms: 0, models: withSlots }, { parallel }, async (s) => {
      for (const model of ['flite', 'espeak']) {
        const results = await Promise.all([1, 2, 3, 4].map(() => speak(s, { model, input })));
        for (const r of results) assert.equal(r.status, 200);
        assert.ok(
          results.every((r) => r.body.equals(results[0]!.body)),
          `${model} at slots=${slots}`,
        );
        outputs.push(results[0]!.body);
      }
    });
  }
  const flite = outputs.filter((_, i) => i % 2 === 0);
  const espeak = outputs.filter((_, i) => i % 2 === 1);
  for (const same of [flite, espeak]) assert.ok(same.every((b) => b.equals(same[0]!)));
});
