/**
 * The real synthesizers stream for real: a streamed answer starts with the first sentence while
 * later ones are still being made, and its PCM is byte for byte the offline answer's.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { modelStatus, post, startServer, type TestServer } from '../../helpers/voxd.js';

// The last sentence is long, so it is still being synthesised well after the first one is sent.
const LONG = Array.from({ length: 40 }, (_, i) => `clause number ${i + 1} goes on`).join(', ');
const TEXT = `First, a short sentence. Then another one. ${LONG}.`;

// festival (festival_tts) streams through the same sentence loop, from its own child process.
for (const model of ['flite', 'espeak', 'festival']) {
  describe(`${model}: streamed speech`, () => {
    let s: TestServer;
    before(async () => {
      s = await startServer(
        {
          busy_timeout_ms: 0,
          models: [{ id: model, family: `${model}_tts`, task: 'tts', mode: 'streaming', lazy: true }],
        },
        { parallel: true },
      );
    });
    after(() => s.close());

    test('the first sentence arrives while the rest is still synthesised; the PCM equals the offline WAV', async () => {
      const res = await fetch(`${s.url}/v1/audio/speech`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model, input: TEXT, stream: true, stream_format: 'audio' }),
      });
      assert.equal(res.status, 200);
      const reader = res.body!.getReader();
      const first = await reader.read();
      assert.ok(first.value && first.value.length > 0);
      // The first audio is here, and the request still holds its slot: the text is not done yet.
      assert.equal((await modelStatus(s.url, model)).active_slots, 1, 'synthesis still running');
      const chunks = [Buffer.from(first.value)];
      for (;;) {
        const next = await reader.read();
        if (next.done) break;
        chunks.push(Buffer.from(next.value));
      }
      const streamed = Buffer.concat(chunks);
      // The stream's raw PCM is OpenAI's 24 kHz; the offline WAV is asked for at that rate.
      const offline = await post(s.url, '/v1/audio/speech', { model, input: TEXT, sample_rate: 24000 });
      assert.equal(offline.status, 200);
      assert.ok(streamed.length > 32000, `${streamed.length} bytes`);
      assert.deepEqual(streamed, offline.body.subarray(44), 'streamed PCM = offline WAV data, byte for byte');
    });
  });
}
