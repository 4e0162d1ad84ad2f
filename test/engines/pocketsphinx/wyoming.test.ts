/**
 * Wyoming with real engines: flite speaks a sentence over Wyoming (`synthesize`), and the audio it
 * sent, streamed back in 100 ms chunks at speaking pace to pocketsphinx (`transcribe`), comes back
 * as the sentence's words, with `transcript-start` and `transcript-chunk` events while the audio
 * still flows (a streaming engine), then `transcript` and `transcript-stop`. The same audio sent
 * at once is searched whole at audio-stop, its words sent as chunks before the transcript: the very
 * words the HTTP route gives.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { wavHeader } from '../../../src/audio/wav-encode.js';
import { lazyModel } from '../../helpers/models.js';
import { suiteServer } from '../../helpers/suite-server.js';
import { post, transcribe, waitUntil } from '../../helpers/voxd.js';
import { audioOf, WyomingClient } from '../../helpers/wyoming.js';

const SENTENCE = 'Please call me tomorrow morning about the weather.';
const WORDS = ['please', 'call', 'tomorrow', 'morning', 'weather'];

/** flite speaks SENTENCE over Wyoming: its audio-start's format and its PCM16. */
async function speakSentence(c: WyomingClient): Promise<{ start: { rate: number }; pcm: Buffer }> {
  const seen = c.events.length;
  c.send('synthesize', { text: SENTENCE, voice: { name: 'flite' } });
  const start = (await c.next('audio-start', seen)).data as { rate: number };
  await c.next('audio-stop', seen);
  return { start, pcm: audioOf(c.events, seen) };
}

describe('Wyoming: flite speaks, pocketsphinx hears', () => {
  const s = suiteServer({
    wyoming_port: 0,
    busy_timeout_ms: 0,
    models: [
      lazyModel('flite', 'flite_tts', 'tts'),
      lazyModel('pocketsphinx', 'pocketsphinx_asr', 'asr'),
      lazyModel('espeak', 'espeak_tts', 'tts'),
      lazyModel('festival', 'festival_tts', 'tts'),
    ],
  });

  test('synthesize with flite, transcribe with pocketsphinx: the words come back, streamed while the audio flows', async () => {
    const c = await WyomingClient.open(s.voxd.wyoming!.port);
    try {
      c.send('describe');
      const info = (await c.next('info')).data;
      assert.equal(info.asr[0].supports_transcript_streaming, true);
      assert.ok(info.tts[0].voices.some((v: { name: string }) => v.name === 'flite'));

      const { start, pcm } = await speakSentence(c);
      assert.ok(pcm.length / 2 / start.rate > 1.5, `${pcm.length} bytes of speech`);

      const seen = c.events.length;
      const format = { rate: start.rate, width: 2, channels: 1 };
      c.send('transcribe', { name: 'pocketsphinx', language: 'en' });
      c.send('audio-start', format);
      // A microphone's pace: each 100 ms chunk 100 ms after the one before (the pace is what is
      // tested, so it is kept with timers, not gates).
      const piece = (start.rate / 10) * 2;
      for (let at = 0; at < pcm.length; at += piece) {
        c.send('audio-chunk', format, pcm.subarray(at, at + piece));
        await sleep(100);
      }
      // Words heard before the audio ends: text arrives before audio-stop is sent.
      await c.next('transcript-chunk', seen, 30_000);
      c.send('audio-stop');
      const transcript = await c.next('transcript', seen, 30_000);
      await c.next('transcript-stop', seen);
      const text = String(transcript.data.text).toLowerCase();
      assert.ok(WORDS.filter((w) => text.includes(w)).length >= 3, `heard: ${text}`);
      const types = c.types().slice(seen);
      assert.ok(types.indexOf('transcript-start') < types.indexOf('transcript-chunk'));
      const chunks = c.events
        .slice(seen)
        .filter((e) => e.type === 'transcript-chunk')
        .map((e) => e.data.text)
        .join('');
      assert.equal(chunks.trim(), transcript.data.text);
    } finally {
      await c.close();
    }
  });

  test('a live transcription refused mid-stream (a bad chunk) frees its slot at once; its connection ends with the error', async () => {
    const c = await WyomingClient.open(s.voxd.wyoming!.port);
    try {
      const { start, pcm } = await speakSentence(c);
      const seen = c.events.length;
      const format = { rate: start.rate, width: 2, channels: 1 };
      c.send('transcribe', { name: 'pocketsphinx' });
      c.send('audio-start', format);
      const piece = (start.rate / 10) * 2;
      for (let at = 0; at < piece * 12; at += piece) {
        c.send('audio-chunk', format, pcm.subarray(at, at + piece));
        await sleep(100);
      }
      // The server's one pocketsphinx slot: a transcription over HTTP that waits 1 ms at most is
      // refused while the live exchange holds it, and answered once it is free.
      const wav = Buffer.concat([wavHeader(start.rate, 1, piece * 5), pcm.subarray(0, piece * 5)]);
      const http = async () =>
        (await transcribe(s.url, 'pocketsphinx', wav, { busy_timeout_ms: '1' })).status;
      await waitUntil('the live exchange holds the slot', async () => (await http()) === 503, 20_000);
      c.send('audio-chunk', format, Buffer.alloc(3));
      assert.equal((await c.refusal(seen)).data.code, 'invalid_audio');
      await waitUntil('the slot is free', async () => (await http()) === 200);
    } finally {
      c.socket.destroy();
    }
  });

  test('the same speech sent at once is searched whole at audio-stop: its words as chunks, then the words HTTP gives', async () => {
    const c = await WyomingClient.open(s.voxd.wyoming!.port);
    try {
      const { start, pcm } = await speakSentence(c);
      const seen = c.events.length;
      const format = { rate: start.rate, width: 2, channels: 1 };
      c.send('transcribe', { name: 'pocketsphinx', language: 'en' });
      c.send('audio-start', format);
      const piece = (start.rate / 10) * 2;
      for (let at = 0; at < pcm.length; at += piece)
        c.send('audio-chunk', format, pcm.subarray(at, at + piece));
      c.send('audio-stop');
      const transcript = await c.next('transcript', seen, 30_000);
      await c.next('transcript-stop', seen);
      const types = c.types().slice(seen);
      const chunks = c.events.slice(seen).filter((e) => e.type === 'transcript-chunk');
      assert.ok(chunks.length >= 3, `chunks, as supports_transcript_streaming promises: ${types.join(', ')}`);
      assert.deepEqual(types, [
        'transcript-start',
        ...chunks.map(() => 'transcript-chunk'),
        'transcript',
        'transcript-stop',
      ]);
      assert.equal(
        chunks.map((e) => e.data.text).join(''),
        transcript.data.text,
        'the chunks join into the transcript',
      );
      const http = await transcribe(
        s.url,
        'pocketsphinx',
        Buffer.concat([wavHeader(start.rate, 1, pcm.length), pcm]),
        {
          language: 'en',
        },
      );
      assert.equal(http.status, 200, http.body.toString());
      assert.equal(transcript.data.text, http.json.text);
      assert.ok(WORDS.filter((w) => http.json.text.toLowerCase().includes(w)).length >= 3, http.json.text);
    } finally {
      await c.close();
    }
  });

  test('streamed synthesis with flite, cut mid-word: the first sentence sounds before the text ends, and pocketsphinx hears it all', async () => {
    const c = await WyomingClient.open(s.voxd.wyoming!.port);
    try {
      c.send('synthesize-start', { voice: { name: 'flite' } });
      for (const piece of ['Please ca', 'll me tomor', 'row morn', 'ing. ', 'The wea'])
        c.send('synthesize-chunk', { text: piece });
      await c.next('audio-stop');
      c.send('synthesize-chunk', { text: 'ther is nice today.' });
      c.send('synthesize-stop');
      await c.next('synthesize-stopped');
      assert.equal(c.types().filter((t) => t === 'audio-start').length, 2);
      const rate = c.events.find((e) => e.type === 'audio-start')!.data.rate;
      const pcm = audioOf(c.events);
      const seen = c.events.length;
      const format = { rate, width: 2, channels: 1 };
      c.send('transcribe', { name: 'pocketsphinx' });
      c.send('audio-start', format);
      c.send('audio-chunk', format, pcm);
      c.send('audio-stop');
      const text = String((await c.next('transcript', seen, 30_000)).data.text).toLowerCase();
      assert.ok(
        ['please', 'call', 'tomorrow', 'morning', 'weather', 'nice', 'today'].filter((w) => text.includes(w))
          .length >= 4,
        `heard: ${text}`,
      );
    } finally {
      await c.close();
    }
  });

  test('every embedded speech model speaks over Wyoming the samples it speaks over HTTP', async () => {
    for (const model of ['flite', 'espeak', 'festival']) {
      const c = await WyomingClient.open(s.voxd.wyoming!.port);
      try {
        c.send('synthesize', { text: 'Good morning to you.', voice: { name: model } });
        const start = (await c.next('audio-start', 0, 30_000)).data;
        await c.next('audio-stop', 0, 30_000);
        const http = await post(s.url, '/v1/audio/speech', {
          model,
          input: 'Good morning to you.',
          response_format: 'pcm',
          sample_rate: start.rate,
        });
        assert.equal(http.status, 200, http.body.toString());
        const pcm = audioOf(c.events);
        assert.ok(pcm.length > start.rate / 2, `${model}: ${pcm.length} bytes`);
        assert.ok(pcm.equals(http.body), `${model}: the same samples as HTTP`);
      } finally {
        await c.close();
      }
    }
  });
});
