/**
 * Deepgram's streaming TTS socket, `/v1/speak` (issue 41), against a real voxd speaking with flite:
 * text sent word by word as a language model writes it, Flush, and the audio heard back by voxd's
 * STT (pocketsphinx) as well as the same text through /v1/audio/speech.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FLITE, lazyModel } from '../../helpers/models.js';
import { suiteServer } from '../../helpers/suite-server.js';
import { describe as framesOf, openSpeak } from './speak-socket.js';

const POCKETSPHINX = lazyModel('pocketsphinx', 'pocketsphinx_asr', 'asr');

describe('/v1/speak with flite', () => {
  const s = suiteServer({ models: [FLITE, POCKETSPHINX] });

  test('opens with Metadata; word-by-word text and a Flush give audio, then Flushed', async () => {
    const c = await openSpeak(s.url, 'model=aura-2-thalia-en&encoding=linear16&sample_rate=24000');
    try {
      const { message: meta } = await c.next('Metadata');
      assert.equal(meta.model_name, 'aura-2-thalia-en');
      assert.match(meta.request_id, /^[0-9a-f-]{36}$/);
      assert.match(meta.model_uuid, /^[0-9a-f-]{36}$/);
      assert.equal(typeof meta.model_version, 'string');
      for (const word of ['Please ', 'call ', 'me ', 'tomor', 'row ', 'morning.']) c.speak(word);
      c.send({ type: 'Flush' });
      const { message, at } = await c.next('Flushed');
      assert.equal(message.sequence_id, 0);
      const audio = c.audio(0, at);
      assert.ok(audio.length > 24000, `${audio.length} bytes of audio before Flushed: ${framesOf(c.frames)}`);
      assert.equal(audio.length % 2, 0);
    } finally {
      c.ws.close();
    }
  });
});
