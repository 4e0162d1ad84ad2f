/** OpenAI voice names on the embedded engines, over real HTTP: aliases, overrides, voice objects. */

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { floats } from '../../src/audio/pcm16-audio.js';
import { decodeWav } from '../../src/audio/wav-decode.js';
import { OPENAI_VOICES } from '../../src/engines/voice-aliases.js';
import { ESPEAK_ALIASES, FLITE_ALIASES } from '../../src/engines/wasm-tts/wasm-tts-family.js';
import { FLITE, lazyModel } from '../helpers/models.js';
import { engineSuiteServer } from '../helpers/suite-server.js';
import { badRequest, get, post } from '../helpers/voxd.js';

const INPUT = 'Hello there.';

describe('voice aliases (flite_tts, espeak_tts)', () => {
  const s = engineSuiteServer([
    FLITE,
    lazyModel('espeak', 'espeak_tts', 'tts'),
    lazyModel('flite-custom', 'flite_tts', 'tts', { voice_aliases: { alloy: 'awb', narrator: 'rms' } }),
  ]);

  const speak = (body: Record<string, unknown>) => post(s.url, '/v1/audio/speech', { input: INPUT, ...body });

  async function samplesOf(body: Record<string, unknown>): Promise<Float32Array> {
    const res = await speak(body);
    assert.equal(res.status, 200, `${JSON.stringify(body)}: ${res.body.toString('utf8')}`);
    const audio = decodeWav(res.body);
    assert.ok(floats(audio).length > 1000, `${JSON.stringify(body)}: no audio`);
    return floats(audio);
  }

  test('every OpenAI voice name speaks on flite, in the voice the table names', async () => {
    const byVoice = new Map<string, Float32Array>();
    for (const voice of new Set(Object.values(FLITE_ALIASES)))
      byVoice.set(voice, await samplesOf({ model: 'flite', voice }));
    for (const name of OPENAI_VOICES) {
      const target = FLITE_ALIASES[name]!;
      assert.deepEqual(await samplesOf({ model: 'flite', voice: name }), byVoice.get(target), name);
    }
    // Female names and male names are different voices.
    assert.notDeepEqual(byVoice.get(FLITE_ALIASES['nova']!), byVoice.get(FLITE_ALIASES['onyx']!));
  });

  test('every OpenAI voice name speaks on espeak-ng, each in its own voice', async () => {
    assert.equal(new Set(Object.values(ESPEAK_ALIASES)).size, OPENAI_VOICES.length, 'distinct voices');
    for (const name of OPENAI_VOICES) {
      const samples = await samplesOf({ model: 'espeak', voice: name });
      const target = ESPEAK_ALIASES[name]!;
      // The +f variants add noise that differs from run to run; the others are repeatable.
      if (!target.includes('+f'))
        assert.deepEqual(samples, await samplesOf({ model: 'espeak', voice: target }), name);
    }
  });

  test('a voice object {"id": ...} is the same voice as its name', async () => {
    assert.deepEqual(
      await samplesOf({ model: 'flite', voice: { id: 'nova' } }),
      await samplesOf({ model: 'flite', voice: 'slt' }),
    );
    badRequest(
      await speak({ model: 'flite', voice: { name: 'nova' } }),
      'voice:',
      '{"name":"nova"}',
      '{"id"',
    );
  });

  test('voice_aliases overrides a default and adds names', async () => {
    const awb = await samplesOf({ model: 'flite', voice: 'awb' });
    assert.deepEqual(await samplesOf({ model: 'flite-custom', voice: 'alloy' }), awb);
    assert.notDeepEqual(await samplesOf({ model: 'flite', voice: 'alloy' }), awb);
    assert.deepEqual(
      await samplesOf({ model: 'flite-custom', voice: 'narrator' }),
      await samplesOf({ model: 'flite', voice: 'rms' }),
    );
    // The other defaults stay.
    assert.deepEqual(
      await samplesOf({ model: 'flite-custom', voice: 'nova' }),
      await samplesOf({ model: 'flite', voice: 'slt' }),
    );
  });

  test('an unknown voice is a 400 that lists the valid ones', async () => {
    badRequest(
      await speak({ model: 'flite', voice: 'nobody' }),
      'voice: "nobody"',
      'kal16, kal, slt',
      'alloy',
    );
    badRequest(await speak({ model: 'espeak', voice: 'zz' }), 'voice: "zz"', 'en-us', 'alloy');
    badRequest(await speak({ model: 'espeak', voice: 'no voice!' }), 'voice: "no voice!"', 'en-us', 'alloy');
  });

  test('instructions are accepted and ignored by engines that can not use them', async () => {
    assert.deepEqual(
      await samplesOf({ model: 'flite', voice: 'coral', instructions: 'Speak cheerfully.' }),
      await samplesOf({ model: 'flite', voice: 'coral' }),
    );
    assert.deepEqual(
      await samplesOf({ model: 'espeak', voice: 'echo', instructions: 'Whisper.' }),
      await samplesOf({ model: 'espeak', voice: 'echo' }),
    );
  });

  test('GET /v1/audio/voices lists the aliases with their engine voices', async () => {
    const flite = await get(s.url, '/v1/audio/voices?model=flite');
    assert.equal(flite.status, 200);
    assert.deepEqual(flite.json.voices, [...OPENAI_VOICES].sort());
    assert.deepEqual(flite.json.aliases, FLITE_ALIASES);
    const custom = await get(s.url, '/v1/audio/voices?model=flite-custom');
    assert.deepEqual(custom.json.voices, [...OPENAI_VOICES, 'narrator'].sort());
    assert.equal(custom.json.aliases.alloy, 'awb');
    assert.equal(custom.json.aliases.narrator, 'rms');
    assert.deepEqual((await get(s.url, '/v1/audio/voices?model=espeak')).json.aliases, ESPEAK_ALIASES);
  });
});
