/**
 * model_aliases over real HTTP: every route that takes a model takes an alias and runs the model it
 * names (speech, transcriptions, translations' checks, details, batches, tasks, streams, live
 * routes, voices); /v1/models lists aliases with their models and as entries of their own; a model
 * id wins over an alias; an alias whose model is missing is a 404 naming both; management routes
 * speak in model ids only.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sseEvents } from '../helpers/sse.js';
import { suiteServer } from '../helpers/suite-server.js';
import { errorOf, fixtureModel, get, post, request, startServer, transcribe } from '../helpers/voxd.js';
import { smallWav } from './wav-helpers.js';

describe('model aliases', () => {
  const streaming = { mode: 'streaming' };
  const s = suiteServer(
    {
      ui_management: true,
      model_aliases: {
        'whisper-1': 'ears',
        'tts-1': 'voice',
        speaker: 'voice',
        'gone-1': 'no-such-model',
        'pull-me': 'whisper-tiny.en',
      },
      models: [
        fixtureModel('ears', streaming),
        fixtureModel('voice', { task: 'tts', ...streaming }),
        fixtureModel('other', { task: 'tts' }),
      ],
    },
    { overrides: { model_aliases: { 'tts-1-hd': 'other', 'gpt-4o-mini-tts': '' } } },
  );
  const runs = (id: string) => s.fixture.record.of(id, 'run-start').length;
  /** Runs `call` and asserts it ran once on model `id`. */
  async function ranOn<T>(id: string, call: () => Promise<T>): Promise<T> {
    const before = runs(id);
    const result = await call();
    assert.equal(runs(id), before + 1, `one run on ${id}`);
    return result;
  }

  test('the config refuses an alias that a model id would hide', async () => {
    await assert.rejects(
      startServer({
        model_aliases: { ears: 'voice' },
        models: [fixtureModel('ears'), fixtureModel('voice')],
      }),
      /model_aliases.ears: "ears" is invalid; "ears" is the id of a configured model/,
    );
  });

  test('speech: JSON, a stream and b64_json through an alias run the model it names', async () => {
    const wav = await ranOn('voice', () => post(s.url, '/v1/audio/speech', { model: 'tts-1', input: 'hi' }));
    assert.equal(wav.status, 200);
    assert.equal(wav.headers.get('content-type'), 'audio/wav');
    const direct = await post(s.url, '/v1/audio/speech', { model: 'voice', input: 'hi' });
    assert.ok(wav.body.equals(direct.body), 'the same speech as the model itself');
    const streamed = await ranOn('voice', () =>
      post(s.url, '/v1/audio/speech', { model: 'tts-1', input: 'hi', stream: true }),
    );
    assert.equal(sseEvents(streamed.body).at(-1), '[DONE]');
    const hd = await ranOn('other', () =>
      post(s.url, '/v1/audio/speech', { model: 'tts-1-hd', input: 'hi', response_format: 'b64_json' }),
    );
    assert.equal(hd.status, 200);
  });

  test('transcriptions: multipart, JSON with a path, a stream and details through an alias', async () => {
    const wav = smallWav();
    const plain = await ranOn('ears', () => transcribe(s.url, 'whisper-1', wav));
    assert.equal(plain.status, 200, plain.body.toString());
    const streamed = await ranOn('ears', () => transcribe(s.url, 'whisper-1', wav, { stream: 'true' }));
    assert.equal(sseEvents(streamed.body).at(-1), '[DONE]');
    const form = new FormData();
    form.set('model', 'whisper-1');
    form.set('file', new Blob([wav]), 'a.wav');
    const details = await ranOn('ears', () =>
      request(s.url, 'POST', '/v1/audio/transcriptions/details', { body: form }),
    );
    assert.equal(details.status, 200);
    // Translation checks the model behind the alias: a fixture is no Whisper model.
    const translate = new FormData();
    translate.set('model', 'whisper-1');
    translate.set('file', new Blob([wav]), 'a.wav');
    const refused = await request(s.url, 'POST', '/v1/audio/translations', { body: translate });
    assert.match(errorOf(refused, 400, 'invalid_request_error'), /model: 'ears' cannot translate/);
  });

  test('batches and tasks: run, stream and batch through an alias', async () => {
    const form = new FormData();
    form.set('model', 'whisper-1');
    form.append('file', new Blob([smallWav()]), 'a.wav');
    const batch = await ranOn('ears', () =>
      request(s.url, 'POST', '/v1/batches/transcriptions', { body: form }),
    );
    assert.equal(sseEvents(batch.body).at(-1), '[DONE]');
    const run = await ranOn('ears', () =>
      post(s.url, '/v1/tasks/run', { model: 'whisper-1', request: { text: 'x' } }),
    );
    assert.equal(run.status, 200);
    const streamed = await ranOn('ears', () =>
      post(s.url, '/v1/tasks/stream', { model: 'whisper-1', request: { text: 'x' } }),
    );
    assert.equal(streamed.status, 200);
    const batched = await ranOn('voice', () =>
      post(s.url, '/v1/tasks/batch', { model: 'tts-1', requests: [{ text: 'x' }] }),
    );
    assert.equal(sseEvents(batched.body).at(-1), '[DONE]');
  });

  test('live routes and voices take an alias in their query', async () => {
    const pcm = smallWav().subarray(44);
    const live = async (path: string) => {
      const body = new ReadableStream({
        start(controller) {
          controller.enqueue(pcm);
          controller.close();
        },
      });
      const res = await fetch(`${s.url}${path}`, { method: 'POST', body, duplex: 'half' } as RequestInit);
      return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
    };
    const heard = await ranOn('ears', () => live('/v1/audio/transcriptions/live?model=whisper-1'));
    assert.equal(heard.status, 200, heard.body.toString());
    assert.equal(sseEvents(heard.body).at(-1), '[DONE]');
    const spoken = await ranOn('voice', () => live('/v1/audio/speech/live?model=tts-1&input=hi'));
    assert.equal(spoken.status, 200, spoken.body.toString());
    const voices = await get(s.url, '/v1/audio/voices?model=tts-1');
    assert.deepEqual(voices.json.aliases, (await get(s.url, '/v1/audio/voices?model=voice')).json.aliases);
    assert.ok(voices.json.aliases, 'the speech model behind the alias');
  });

  test('/v1/models: each model lists its aliases, and each alias is an entry naming its model', async () => {
    const { json } = await get(s.url, '/v1/models');
    const byId = new Map(json.data.map((m: { id: string }) => [m.id, m]));
    assert.deepEqual(
      json.data.map((m: { id: string }) => m.id),
      ['ears', 'voice', 'other', 'whisper-1', 'tts-1', 'speaker', 'tts-1-hd'],
    );
    const voice = byId.get('voice') as Record<string, unknown>;
    assert.deepEqual(voice['aliases'], ['tts-1', 'speaker']);
    const alias = byId.get('tts-1') as Record<string, unknown>;
    const { id: _a, alias_of, aliases, ...fields } = alias;
    const { id: _v, aliases: _va, ...modelFields } = voice;
    assert.equal(alias_of, 'voice');
    assert.deepEqual(aliases, []);
    assert.deepEqual(fields, modelFields, 'an alias entry carries its model fields');
    // Aliases whose model is missing are not listed; gpt-4o-mini-tts was removed by its flag.
    for (const name of ['gone-1', 'pull-me', 'gpt-4o-mini-tts', 'gpt-4o-transcribe'])
      assert.ok(!byId.has(name), name);
  });

  test('GET /v1/models/{id}: a model, an alias, and 404s that name the id', async () => {
    const voice = await get(s.url, '/v1/models/voice?include_params=1');
    assert.equal(voice.status, 200);
    assert.deepEqual(Object.keys(voice.json).slice(0, 4), ['id', 'object', 'created', 'owned_by']);
    assert.ok(Array.isArray(voice.json.params));
    const listed = (await get(s.url, '/v1/models')).json.data.find((m: { id: string }) => m.id === 'voice');
    assert.deepEqual((await get(s.url, '/v1/models/voice')).json, listed);
    const alias = await get(s.url, '/v1/models/whisper-1');
    assert.deepEqual(
      [alias.json.id, alias.json.alias_of, alias.json.family],
      ['whisper-1', 'ears', 'fixture'],
    );
    const gone = errorOf(await get(s.url, '/v1/models/gone-1'), 404, 'not_found');
    assert.match(
      gone,
      /"gone-1" is an alias of "no-such-model" \(model_aliases\).*unknown model id: "no-such-model"/,
    );
    for (const id of ['nope', 'a%20b']) {
      const res = await get(s.url, `/v1/models/${id}`);
      assert.ok(errorOf(res, 404, 'not_found').includes(`unknown model id: "${id}"`), id);
      assert.equal(res.json.error.code, 'model_not_found');
    }
    const uncatalogued = errorOf(await get(s.url, '/v1/models/whisper-tiny.en'), 404, 'not_found');
    assert.match(uncatalogued, /voxd models pull whisper-tiny\.en/);
    // The exact paths stay theirs: /v1/models/load is POST only.
    assert.equal((await get(s.url, '/v1/models/load')).status, 405);
    assert.equal((await get(s.url, '/v1/models/voice/x')).status, 404);
  });

  test('an alias whose model is missing is a 404 naming the alias and the model', async () => {
    const gone = await post(s.url, '/v1/audio/speech', { model: 'gone-1', input: 'hi' });
    const message = errorOf(gone, 404, 'not_found');
    assert.match(message, /model: "gone-1" is an alias of "no-such-model" \(model_aliases\)/);
    assert.match(message, /unknown model id: "no-such-model"/);
    assert.equal(gone.json.error.param, 'model');
    // A catalogue package behind the alias: the pull hint comes through.
    const pull = errorOf(await transcribe(s.url, 'pull-me', smallWav()), 404, 'not_found');
    assert.match(pull, /"pull-me" is an alias of "whisper-tiny.en".*voxd models pull whisper-tiny\.en/);
    // The defaults name embedded models this config does not have.
    const missing = errorOf(await transcribe(s.url, 'gpt-4o-transcribe', smallWav()), 404, 'not_found');
    assert.match(missing, /"gpt-4o-transcribe" is an alias of "pocketsphinx"/);
  });

  test('a catalogue model that is not installed is a 404 that says how to install it', async () => {
    const transcription = await transcribe(s.url, 'whisper-tiny.en', smallWav());
    const message = errorOf(transcription, 404, 'not_found');
    assert.equal(
      message,
      'unknown model id: "whisper-tiny.en": it is in voxd\'s model catalogue but not installed; run `voxd models pull whisper-tiny.en` (or install it from the web UI\'s Installer tab), then ask again',
    );
    assert.deepEqual(
      [transcription.json.error.param, transcription.json.error.code],
      ['model', 'model_not_found'],
    );
    const speech = await post(s.url, '/v1/audio/speech', { model: 'piper-en_US-amy-low', input: 'hi' });
    assert.match(errorOf(speech, 404, 'not_found'), /voxd models pull piper-en_US-amy-low/);
    // An id no catalogue knows stays a plain unknown id.
    assert.equal(
      errorOf(await transcribe(s.url, 'nope', smallWav()), 404, 'not_found'),
      'unknown model id: "nope"',
    );
  });

  test('management routes take model ids only', async () => {
    const unload = await post(s.url, '/v1/models/unload', { id: 'whisper-1' });
    assert.match(errorOf(unload, 404, 'not_found'), /unknown model id: "whisper-1"/);
    const config = await get(s.url, '/v1/ui/models/config?id=tts-1');
    errorOf(config, 404, 'not_found');
    const bulk = await post(s.url, '/v1/tasks/unload_models', { model_ids: ['whisper-1'] });
    assert.deepEqual(bulk.json.not_found, ['whisper-1']);
  });

  test('a model registered under an alias name wins over the alias, in requests and in /v1/models', async () => {
    const load = await post(s.url, '/v1/models/load', fixtureModel('speaker', { task: 'tts' }));
    assert.equal(load.status, 200, load.body.toString());
    await ranOn('speaker', () => post(s.url, '/v1/audio/speech', { model: 'speaker', input: 'hi' }));
    const { json } = await get(s.url, '/v1/models');
    const voice = json.data.find((m: { id: string }) => m.id === 'voice');
    assert.deepEqual(voice.aliases, ['tts-1']);
    assert.equal(json.data.filter((m: { id: string }) => m.id === 'speaker').length, 1);
    assert.equal((await get(s.url, '/v1/models/speaker')).json.alias_of, undefined);
  });
});
