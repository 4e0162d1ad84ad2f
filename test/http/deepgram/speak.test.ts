/**
 * Deepgram's streaming TTS socket, `/v1/speak` (issue 41), against a real voxd speaking with flite:
 * text sent word by word as a language model writes it, Flush, and the audio heard back by voxd's
 * STT (pocketsphinx) as well as the same text through /v1/audio/speech.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FLITE, lazyModel } from '../../helpers/models.js';
import { RawClient } from '../../helpers/raw-http.js';
import { suiteServer } from '../../helpers/suite-server.js';
import { badRequest, request } from '../../helpers/voxd.js';
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

  test('POST /v1/speak: speed reaches the engine (1.5 is shorter than 0.7); callback and empty text are 400s', async () => {
    const at = async (speed: number) => {
      const res = await request(s.url, 'POST', `/v1/speak?model=flite&container=none&speed=${speed}`, {
        body: JSON.stringify({ text: 'Please call me tomorrow morning.' }),
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(res.status, 200, res.body.toString());
      assert.equal(res.headers.get('content-type'), 'audio/l16;rate=24000;channels=1');
      return res.body.length;
    };
    const fast = await at(1.5);
    const slow = await at(0.7);
    assert.ok(fast < slow * 0.7, `${fast} bytes at 1.5, ${slow} at 0.7`);
    const callback = await request(s.url, 'POST', '/v1/speak?callback=http://example.com/', {
      body: JSON.stringify({ text: 'Hi.' }),
      headers: { 'content-type': 'application/json' },
    });
    badRequest(callback, 'callback', 'calls no URL');
    const empty = await request(s.url, 'POST', '/v1/speak', {
      body: JSON.stringify({ text: ' ' }),
      headers: { 'content-type': 'application/json' },
    });
    badRequest(empty, 'text');
  });

  test('POST /v1/speak to an HTTP/1.0 client: the whole WAV, its sizes exact', async () => {
    const client = new RawClient(s.url);
    const json = JSON.stringify({ text: 'Hello world.' });
    await client.write(
      `POST /v1/speak?model=flite&encoding=alaw&sample_rate=16000 HTTP/1.0\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${json.length}\r\n\r\n${json}`,
    );
    const res = await client.finished();
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], 'audio/wav');
    assert.equal(res.headers['dg-model-name'], 'flite');
    const wav = res.body;
    assert.equal(wav.readUInt16LE(20), 6, 'WAVE_FORMAT_ALAW');
    assert.equal(wav.readUInt16LE(34), 8, '8 bits a sample');
    assert.equal(wav.readUInt32LE(28), 16000, 'bytes a second');
    assert.equal(wav.readUInt32LE(40), wav.length - 44);
    assert.equal(wav.readUInt32LE(4), wav.length - 8);
  });
});
