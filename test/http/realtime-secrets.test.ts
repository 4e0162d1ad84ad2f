/**
 * OpenAI's ephemeral-key flow against a real voxd: the official openai SDK mints keys
 * (`realtime.clientSecrets.create`, `beta.realtime.transcriptionSessions.create`), a `ws` client
 * opens /v1/realtime with one where OpenAI's clients put it (the Bearer header of the SDK's Node
 * client, the subprotocol of its browser client), and the key opens nothing else. Expiry runs on the
 * server's manual clock, never on sleeps.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import OpenAI, { AuthenticationError } from 'openai';
import { ManualClock } from '../helpers/manual-clock.js';
import { suiteServer } from '../helpers/suite-server.js';
import { badRequest, errorOf, fixtureModel, get, post, request, withServer } from '../helpers/voxd.js';
import { openSocket, refusal } from '../helpers/websocket.js';

const KEY = 'sk-secrets-test-0123456789';
const ASR = fixtureModel('asr', { task: 'asr' });
const TRANSCRIPTION = {
  type: 'transcription',
  audio: { input: { transcription: { model: 'asr' } } },
} as const;

const bearer = (key: string) => ({ headers: { Authorization: `Bearer ${key}` } });
const subprotocol = (key: string, ...more: string[]) => ({
  protocols: ['realtime', `openai-insecure-api-key.${key}`, ...more],
});

/** Opens a session on `path` and returns its first event, then closes it. */
async function firstEvent(url: string, options: Parameters<typeof openSocket>[1]) {
  const { ws, messages } = await openSocket(url, options);
  try {
    return await messages.next(() => true);
  } finally {
    ws.close();
  }
}

/** A GA key minted over plain HTTP (`body` as sent). */
async function mint(base: string, body: unknown = { session: TRANSCRIPTION }) {
  const res = await post(base, '/v1/realtime/client_secrets', body);
  assert.equal(res.status, 200, res.body.toString());
  return res.json as { value: string; expires_at: number; session: Record<string, unknown> };
}

describe('ephemeral keys with API keys configured', () => {
  const s = suiteServer({ api_keys: [{ key: KEY, scope: 'inference' }], models: [ASR] });
  const client = () => new OpenAI({ baseURL: `${s.url}/v1`, apiKey: KEY });

  test('the SDK mints a GA key; it opens a session in the Bearer header and in the subprotocol, on its model', async () => {
    const before = Math.floor(Date.now() / 1000);
    const secret = await client().realtime.clientSecrets.create({
      expires_after: { anchor: 'created_at', seconds: 120 },
      session: {
        type: 'transcription',
        audio: { input: { format: { type: 'audio/pcm', rate: 24000 }, transcription: { model: 'asr' } } },
      },
    });
    assert.match(secret.value, /^ek_[A-Za-z0-9_-]{43}$/);
    assert.ok(
      secret.expires_at >= before + 120 && secret.expires_at <= before + 121,
      String(secret.expires_at),
    );
    const session = secret.session as OpenAI.Realtime.RealtimeTranscriptionSessionCreateResponse;
    assert.equal(session.type, 'transcription');
    assert.equal(session.audio?.input?.transcription?.model, 'asr');
    assert.equal(session.expires_at, secret.expires_at);

    // No ?model=: the key's model is the session's.
    for (const where of [bearer(secret.value), subprotocol(secret.value)]) {
      const { ws, messages, send } = await openSocket(`${s.url}/v1/realtime`, where);
      try {
        const created = await messages.next('session.created');
        assert.equal(created.session.audio.input.transcription.model, 'asr');
        if ('protocols' in where)
          assert.equal(ws.protocol, 'realtime', 'the answer is the realtime subprotocol, never the key');
        send({ type: 'input_audio_buffer.append', audio: Buffer.alloc(4800).toString('base64') });
        send({ type: 'input_audio_buffer.commit' });
        await messages.next('conversation.item.input_audio_transcription.completed');
      } finally {
        ws.close();
      }
    }
  });

  test('the SDK mints a beta transcription session; its key opens a beta session', async () => {
    const before = Math.floor(Date.now() / 1000);
    const session = await client().beta.realtime.transcriptionSessions.create({
      client_secret: { expires_at: { anchor: 'created_at', seconds: 30 } },
      input_audio_format: 'g711_ulaw',
      input_audio_transcription: { model: 'asr' as 'whisper-1', language: 'en' },
    });
    assert.match(session.client_secret.value, /^ek_/);
    assert.ok(
      session.client_secret.expires_at >= before + 30 && session.client_secret.expires_at <= before + 31,
    );
    assert.equal(session.input_audio_format, 'g711_ulaw');
    assert.equal(session.input_audio_transcription?.language, 'en');
    // A browser's beta client: no header, the key and the beta flag as subprotocols.
    const created = await firstEvent(
      `${s.url}/v1/realtime?intent=transcription`,
      subprotocol(session.client_secret.value, 'openai-beta.realtime-v1'),
    );
    assert.equal(created.type, 'transcription_session.created');
    assert.equal(created.session.input_audio_transcription.model, 'asr');
  });

  test('the URL model wins over the key model', async () => {
    const { value } = await client().realtime.clientSecrets.create({ session: TRANSCRIPTION });
    const refused = await refusal(`${s.url}/v1/realtime?model=nope`, bearer(value));
    assert.equal(refused.status, 404, 'the URL named the model, not the key');
  });

  test('minting needs an API key, and an ephemeral key mints nothing and opens no HTTP route', async () => {
    const none = await post(s.url, '/v1/realtime/client_secrets', { session: TRANSCRIPTION });
    errorOf(none, 401, 'authentication_error');
    const { value } = await client().realtime.clientSecrets.create({ session: TRANSCRIPTION });
    const sdk = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: value, maxRetries: 0 });
    await assert.rejects(sdk.models.list(), (err: unknown) => {
      assert.ok(err instanceof AuthenticationError, String(err));
      assert.match(err.message, /ephemeral key \(ek_\.\.\.\) opens only a \/v1\/realtime WebSocket session/);
      return true;
    });
    await assert.rejects(sdk.realtime.clientSecrets.create({ session: TRANSCRIPTION }), AuthenticationError);
    for (const headers of [{ Authorization: `Bearer ${value}` }, { 'X-Api-Key': value }] as Record<
      string,
      string
    >[]) {
      const res = await request(s.url, 'POST', '/v1/audio/transcriptions', { headers });
      assert.match(errorOf(res, 401, 'authentication_error'), /\/v1\/audio\/transcriptions needs an API key/);
    }
    // The realtime path asked over plain HTTP is an HTTP route too.
    errorOf(
      await get(s.url, '/v1/realtime', { Authorization: `Bearer ${value}` }),
      401,
      'authentication_error',
    );
    // A real key still opens the realtime route as before, and an unknown ek_ key does not.
    await firstEvent(`${s.url}/v1/realtime?model=asr`, bearer(KEY));
    const unknown = await refusal(`${s.url}/v1/realtime?model=asr`, bearer(`ek_${'A'.repeat(43)}`));
    assert.equal(unknown.status, 401);
    assert.match(unknown.error.message, /expired or was not minted by this server/);
  });
});

describe('ephemeral keys on a keyless server', () => {
  test('it mints without a key; the key lives its seconds on the server clock, then is a 401', async () => {
    const clock = new ManualClock();
    await withServer({ models: [ASR] }, { clock }, async (s) => {
      // /v1/realtime still needs no key.
      await firstEvent(`${s.url}/v1/realtime?model=asr`, {});
      const { value } = await mint(s.url, { expires_after: { seconds: 10 }, session: TRANSCRIPTION });
      clock.advance(9_999);
      const created = await firstEvent(`${s.url}/v1/realtime`, subprotocol(value));
      assert.equal(created.session.audio.input.transcription.model, 'asr');
      clock.advance(1);
      for (const where of [bearer(value), subprotocol(value)]) {
        const expired = await refusal(`${s.url}/v1/realtime`, where);
        assert.equal(expired.status, 401);
        assert.equal(expired.error.code, 'invalid_api_key');
        assert.match(expired.error.message, /expired .*POST \/v1\/realtime\/client_secrets/);
      }
    });
  });

  test('an ephemeral key is refused on HTTP routes there too', async () => {
    await withServer({ models: [ASR] }, async (s) => {
      const { value } = await mint(s.url);
      const res = await get(s.url, '/v1/models', { Authorization: `Bearer ${value}` });
      assert.match(
        errorOf(res, 401, 'authentication_error'),
        /opens only a \/v1\/realtime WebSocket session/,
      );
      // Any other key (what OpenAI clients send to a keyless server) is taken as before.
      assert.equal((await get(s.url, '/v1/models', { Authorization: 'Bearer sk-anything' })).status, 200);
    });
  });

  test('max_client_secrets bounds the live keys: one more is a 503 with Retry-After until the soonest expires', async () => {
    const clock = new ManualClock();
    await withServer({ models: [ASR], max_client_secrets: 2 }, { clock }, async (s) => {
      await mint(s.url, { expires_after: { seconds: 60 } });
      await mint(s.url, { expires_after: { seconds: 30 } });
      const full = await post(s.url, '/v1/realtime/client_secrets', {});
      assert.match(errorOf(full, 503, 'server_busy'), /2 client secrets are live \(max_client_secrets\)/);
      assert.equal(full.json.error.code, 'too_many_client_secrets');
      assert.equal(full.headers.get('retry-after'), '30');
      assert.match((await get(s.url, '/metrics')).body.toString(), /^voxd_client_secrets 2$/m);
      clock.advance(30_000);
      assert.match((await get(s.url, '/metrics')).body.toString(), /^voxd_client_secrets 1$/m);
      const next = await mint(s.url, {});
      assert.equal((next.session as { type: string }).type, 'transcription');
      errorOf(await post(s.url, '/v1/realtime/client_secrets', {}), 503, 'server_busy');
    });
    await withServer({ models: [ASR], max_client_secrets: 0 }, async (s) => {
      const off = await post(s.url, '/v1/realtime/client_secrets', {});
      assert.match(errorOf(off, 403, 'forbidden'), /max_client_secrets is 0/);
    });
  });

  test("the session config is echoed in the session events' shapes; turn_detection without a type is server VAD, as OpenAI's", async () => {
    const vad = { id: 'silero-vad', family: 'silero_vad', task: 'vad' };
    await withServer({ models: [ASR, vad] }, async (s) => {
      const beta = await post(s.url, '/v1/realtime/transcription_sessions', {
        input_audio_format: 'pcm16',
        input_audio_transcription: { model: 'asr', prompt: 'names' },
        turn_detection: { silence_duration_ms: 800 },
        include: ['item.input_audio_transcription.logprobs'],
      });
      assert.equal(beta.status, 200, beta.body.toString());
      assert.equal(beta.json.object, 'realtime.transcription_session');
      assert.deepEqual(beta.json.input_audio_transcription, {
        model: 'asr',
        language: null,
        prompt: 'names',
      });
      assert.equal(beta.json.turn_detection.type, 'server_vad');
      assert.equal(beta.json.turn_detection.silence_duration_ms, 800);
      assert.deepEqual(beta.json.include, ['item.input_audio_transcription.logprobs']);
      const ga = await mint(s.url, {
        session: {
          type: 'transcription',
          audio: {
            input: {
              format: { type: 'audio/pcmu' },
              turn_detection: { type: 'semantic_vad', eagerness: 'high' },
            },
          },
        },
      });
      const input = (ga.session as { audio: { input: Record<string, unknown> } }).audio.input;
      assert.deepEqual(input['format'], { type: 'audio/pcmu' });
      assert.deepEqual(input['turn_detection'], { type: 'semantic_vad', eagerness: 'high' });
      // A session opened with each key starts from what the key was minted with, as OpenAI's does.
      const realtime = `${s.url}/v1/realtime`;
      const betaStart = await firstEvent(realtime, subprotocol(beta.json.client_secret.value));
      assert.equal(betaStart.type, 'transcription_session.created');
      const { id: _b, expires_at: _e, client_secret: _c, ...minted } = beta.json;
      const { id: _s, ...started } = betaStart.session;
      assert.deepEqual(started, minted);
      const gaStart = await firstEvent(realtime, bearer(ga.value));
      assert.equal(gaStart.type, 'session.created');
      assert.deepEqual(gaStart.session.audio.input, input);
    });
  });

  test('bad bodies are 400s naming the field and its value; nothing is minted for a session that would be refused', async () => {
    await withServer({ models: [ASR, fixtureModel('tts', { task: 'tts' })] }, async (s) => {
      const ga = (body: unknown) => post(s.url, '/v1/realtime/client_secrets', body);
      const beta = (body: unknown) => post(s.url, '/v1/realtime/transcription_sessions', body);
      badRequest(
        await ga({ expires_after: { seconds: 5 } }),
        'expires_after.seconds',
        '5',
        'from 10 to 7200',
      );
      badRequest(await ga({ expires_after: { seconds: 7201 } }), 'expires_after.seconds', '7201');
      badRequest(await ga({ expires_after: { anchor: 'now' } }), 'expires_after.anchor', '"now"');
      badRequest(await ga({ session: { type: 'realtime' } }), 'session.type', '"realtime"', 'transcription');
      badRequest(
        await ga({ session: { type: 'transcription', audio: { input: { format: { type: 'audio/mp3' } } } } }),
        'session.audio.input.format.type',
        '"audio/mp3"',
      );
      const vad = await ga({
        session: { type: 'transcription', audio: { input: { turn_detection: { type: 'server_vad' } } } },
      });
      badRequest(vad, 'session.audio.input.turn_detection', 'silero_vad');
      assert.equal(vad.json.error.param, 'session.audio.input.turn_detection');
      const unknown = await ga({
        session: { type: 'transcription', audio: { input: { transcription: { model: 'nope' } } } },
      });
      errorOf(unknown, 404, 'not_found');
      assert.equal(unknown.json.error.param, 'session.audio.input.transcription.model');
      const tts = await ga({
        session: { type: 'transcription', audio: { input: { transcription: { model: 'tts' } } } },
      });
      badRequest(tts, '"tts" has task \'tts\'');
      assert.equal(tts.json.error.param, 'session.audio.input.transcription.model');
      badRequest(await beta({ input_audio_format: 'mp3' }), 'input_audio_format', '"mp3"');
      badRequest(
        await beta({ client_secret: { expires_at: { seconds: 'long' } } }),
        'client_secret.expires_at.seconds',
        '"long"',
      );
      const betaModel = await beta({ input_audio_transcription: { model: 'nope' } });
      errorOf(betaModel, 404, 'not_found');
      assert.equal(betaModel.json.error.param, 'input_audio_transcription.model');
      badRequest(
        await request(s.url, 'POST', '/v1/realtime/client_secrets', {
          body: '[1]',
          headers: { 'content-type': 'application/json' },
        }),
      );
    });
  });
});
