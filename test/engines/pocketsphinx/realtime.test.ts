/**
 * Issue 25's first "done when": the official openai SDK (OpenAIRealtimeWS) transcribes a spoken
 * sentence over /v1/realtime with pocketsphinx, by manual commit, in both session shapes (GA
 * `audio/pcm` and beta `pcm16`, both 24 kHz), the audio appended in 100 ms pieces as a microphone
 * would, deltas before the completed event. flite speaks the sentence on the same server (wss: the
 * SDK always connects over TLS, so the server serves the committed test certificate).
 *
 * G.711 is not here: it is 8 kHz speech, and pocketsphinx's 16 kHz model does not hear 8 kHz speech
 * whatever its encoding (the sentence sent as 8 kHz PCM16, resampled by ffmpeg or by voxd, came
 * back as "read all the mom are noon"). µ-law and A-law are checked end to end with the fixture
 * engine instead (test/http/realtime/realtime.test.ts: a µ-law tone arrives with its loudness).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import { FLITE, lazyModel } from '../../helpers/models.js';
import { suiteServer } from '../../helpers/suite-server.js';

const TLS = fileURLToPath(new URL('../../../../test/fixtures/tls/', import.meta.url));
const CA = readFileSync(`${TLS}cert.pem`);
const SENTENCE = 'Please call me tomorrow morning. The weather is nice today.';
const WORDS = ['please', 'call', 'tomorrow', 'morning', 'weather'];

/** flite's PCM16 for the sentence at `rate`, through the server's own speech route. */
function speak(base: string, rate: number): Promise<Buffer> {
  const body = JSON.stringify({
    model: 'flite',
    input: SENTENCE,
    voice: 'slt',
    response_format: 'pcm',
    sample_rate: rate,
  });
  return new Promise((resolve, reject) => {
    const req = request(
      `${base}/v1/audio/speech`,
      { method: 'POST', ca: CA, headers: { 'Content-Type': 'application/json' } },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () =>
          res.statusCode === 200
            ? resolve(Buffer.concat(parts))
            : reject(new Error(`speech: ${res.statusCode} ${Buffer.concat(parts)}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('pocketsphinx over /v1/realtime with the openai SDK', () => {
  const s = suiteServer({
    tls_cert_file: `${TLS}cert.pem`,
    tls_key_file: `${TLS}key.pem`,
    busy_timeout_ms: 0,
    models: [FLITE, lazyModel('pocketsphinx', 'pocketsphinx_asr', 'asr')],
  });

  /** Opens a session, runs `configure`, streams `audio` in 100 ms pieces, commits; the turn's events. */
  async function transcribe(
    model: string,
    configure: (rt: OpenAIRealtimeWS) => void,
    audio: Buffer,
    bytesPer100Ms: number,
  ) {
    const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'unused' });
    const rt = new OpenAIRealtimeWS({ model, options: { ca: CA } }, client);
    const types: string[] = [];
    const deltas: string[] = [];
    rt.on('event', (e: { type: string; delta?: string }) => {
      types.push(e.type);
      if (e.type === 'conversation.item.input_audio_transcription.delta') deltas.push(e.delta ?? '');
    });
    const errors: string[] = [];
    rt.on('error', (err) => errors.push(err.message));
    try {
      await new Promise<void>((resolve, reject) => {
        rt.socket.on('open', resolve);
        rt.socket.on('error', reject);
      });
      const updated = new Promise<void>((resolve) =>
        rt.on('event', (e: { type: string }) => {
          if (e.type === 'session.updated' || e.type === 'transcription_session.updated') resolve();
        }),
      );
      configure(rt);
      await updated;
      for (let at = 0; at < audio.length; at += bytesPer100Ms)
        rt.send({
          type: 'input_audio_buffer.append',
          audio: audio.subarray(at, at + bytesPer100Ms).toString('base64'),
        });
      const completed = new Promise<{ transcript: string }>((resolve) =>
        rt.on('conversation.item.input_audio_transcription.completed', resolve),
      );
      rt.send({ type: 'input_audio_buffer.commit' });
      const { transcript } = await completed;
      assert.deepEqual(errors, []);
      return { transcript, deltas, types };
    } finally {
      rt.close();
    }
  }

  const heard = (transcript: string) => WORDS.filter((w) => transcript.toLowerCase().includes(w));

  test('GA session, audio/pcm at 24 kHz, model whisper-1 (an alias of pocketsphinx)', async () => {
    const pcm = await speak(s.url, 24000);
    const { transcript, deltas, types } = await transcribe(
      'whisper-1',
      (rt) =>
        rt.send({
          type: 'session.update',
          session: {
            type: 'transcription',
            audio: { input: { format: { type: 'audio/pcm', rate: 24000 }, turn_detection: null } },
          },
        }),
      pcm,
      4800,
    );
    assert.ok(heard(transcript).length >= 3, `heard: ${transcript}`);
    assert.ok(
      deltas.length >= 1 &&
        types.indexOf('conversation.item.input_audio_transcription.delta') <
          types.indexOf('conversation.item.input_audio_transcription.completed'),
    );
    assert.equal(deltas.join(''), transcript);
  });

  test('beta session, pcm16 (24 kHz), model pocketsphinx', async () => {
    const pcm = await speak(s.url, 24000);
    const { transcript, deltas } = await transcribe(
      'pocketsphinx',
      // The SDK's own types are GA only; older SDKs (and .NET's) send this beta shape.
      (rt) =>
        rt.send({
          type: 'transcription_session.update',
          session: { input_audio_format: 'pcm16', turn_detection: null },
        } as never),
      pcm,
      4800,
    );
    assert.ok(heard(transcript).length >= 3, `heard: ${transcript}`);
    assert.equal(deltas.join(''), transcript);
  });
});
