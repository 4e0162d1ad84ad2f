/**
 * transcriptionRequest (src/api/transcription/engine-request.ts): the one place every front end's
 * request on input audio gets its engine options, in their order of precedence.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { defaultLanguage, transcriptionRequest } from '../../../src/api/transcription/engine-request.js';
import { parseModelConfig } from '../../../src/config/model-config.js';
import type { ParamRow } from '../../../src/engines/types.js';

function entry(defaults: Record<string, unknown>, params: string[] = [], task = 'asr') {
  const { model } = parseModelConfig(
    { id: 'm', family: 'fixture', path: '.', task, default_request_options: defaults },
    { key: 'models[0]', baseDir: '.', lazyDefault: true, parallel: false, knownFamilies: ['fixture'] },
  );
  const rows: ParamRow[] = params.map((name) => ({ name, type: 'float', description: name }));
  return { config: model, family: { params: rows } as never };
}

describe('transcriptionRequest', () => {
  test("the model's defaults, then the request's options, then language, translation and temperature", () => {
    const m = entry({ beam: 2, language: 'de', task: 'transcribe', temperature: 0.5 }, ['temperature']);
    const request = transcriptionRequest(m, {
      language: 'fr',
      prompt: 'context',
      options: { beam: 5, language: 'it', extra: true },
      translate: true,
      temperature: 0.2,
    });
    assert.deepEqual(request.options, {
      beam: '5',
      language: 'fr',
      task: 'translate',
      temperature: '0.2',
      extra: 'true',
    });
    assert.equal(request.task, 'asr');
    assert.equal(request.text, 'context');
    assert.equal(request.language, 'fr');
  });

  test('nothing asked: the defaults alone, and no audio until it is given', () => {
    const m = entry({ language: 'de' }, [], 'diar');
    const request = transcriptionRequest(m, {});
    assert.deepEqual(request.options, { language: 'de' });
    assert.equal(request.task, 'diar');
    assert.equal(request.audio, undefined);
    const audio = { samples: new Float32Array(4), sampleRate: 16000, channels: 1 };
    assert.equal(transcriptionRequest(m, {}, { audio }).audio, audio);
  });

  test('an empty language leaves the options alone; temperature only for an engine that lists it', () => {
    const m = entry({ language: 'de' });
    const request = transcriptionRequest(m, { language: '', temperature: 0.3 });
    assert.deepEqual(request.options, { language: 'de' });
    assert.equal(request.language, '');
  });

  test("options that are not an object are refused naming 'options'", () => {
    assert.throws(
      () => transcriptionRequest(entry({}), { options: [1, 2] }),
      (err: Error) => err.message.includes('options'),
    );
  });

  test("defaultLanguage: the defaults' language, if any", () => {
    assert.equal(defaultLanguage(entry({ language: 'sv' }).config), 'sv');
    assert.equal(defaultLanguage(entry({ language: '' }).config), undefined);
    assert.equal(defaultLanguage(entry({}).config), undefined);
  });
});
