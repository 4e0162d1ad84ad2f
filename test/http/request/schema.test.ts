/**
 * A route's schema is its validation: for every field of POST /v1/audio/speech's schema (the one
 * the OpenAPI document publishes), a value of the wrong type, chosen from the schema itself, is a
 * 400 whose `param` is that field and whose message shows the value. Before the schema, 11 of the
 * documented fields (voice as an object without an id, and the generation knobs) took any value
 * and answered 200. Field paths of nested bodies are written as a client writes them.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Type } from '@sinclair/typebox';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { bodyChecker, Text } from '../../../src/http/request/schema.js';
import { SpeechRequest } from '../../../src/http/schemas/speech-request.js';
import { errorOf, fixtureModel, post, startServer, type TestServer } from '../../helpers/voxd.js';

/** Candidate wrong values, tried in order: the first the field's schema refuses is sent. */
const WRONG: unknown[] = [{ not: 'a string' }, 'not-a-number', 12.5, true, ['x'], -1, ''];

const ajv = new Ajv2020({ strict: false });
const fields = Object.entries(SpeechRequest.properties).map(([name, schema]) => {
  const accepts = ajv.compile(JSON.parse(JSON.stringify(schema)));
  const wrong = WRONG.find((value) => !accepts(value));
  return { name, wrong };
});

describe('request schemas', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer({ models: [fixtureModel('tts', { task: 'tts' })] });
  });
  after(() => s.close());

  test('every field of the speech schema has a wrong value to try', () => {
    assert.deepEqual(
      fields.filter((f) => f.wrong === undefined).map((f) => f.name),
      [],
    );
    assert.ok(fields.length >= 24, `${fields.length} fields`);
  });

  for (const { name, wrong } of fields)
    test(`POST /v1/audio/speech with ${name}: ${JSON.stringify(wrong)} is a 400 naming ${name}`, async () => {
      const body = { model: 'tts', input: 'hello', [name]: wrong };
      const res = await post(s.url, '/v1/audio/speech', body);
      const message = errorOf(res, 400, 'invalid_request_error');
      assert.equal(res.json.error.param, name, message);
      assert.ok(message.startsWith(`${name}: `) || message.startsWith(`'${name}'`), message);
      assert.ok(message.includes(JSON.stringify(wrong).slice(0, 20)), `the value is shown: ${message}`);
    });

  test('the fields that took any value before answer 400 now', async () => {
    for (const [name, wrong] of [
      ['voice', { not: 'a string' }],
      ['seed', 'not-a-number'],
      ['temperature', 'hot'],
      ['top_k', 1.5],
      ['top_p', 'x'],
      ['max_tokens', 'many'],
      ['max_steps', true],
      ['repetition_penalty', []],
      ['guidance_scale', {}],
      ['num_inference_steps', 'ten'],
    ] as const) {
      const res = await post(s.url, '/v1/audio/speech', { model: 'tts', input: 'hello', [name]: wrong });
      assert.equal(res.status, 400, `${name}: ${res.body.toString()}`);
      assert.equal(res.json.error.param, name);
    }
    // What was right stays right: numbers as numbers or as the strings audio.cpp's clients send.
    for (const body of [
      { seed: 5 },
      { seed: '5' },
      { temperature: 0.7 },
      { temperature: '0.7' },
      { voice: { id: 'x' } },
    ]) {
      const res = await post(s.url, '/v1/audio/speech', { model: 'tts', input: 'hello', ...body });
      assert.equal(res.status, 200, `${JSON.stringify(body)}: ${res.body.toString()}`);
    }
  });
});

test('a nested field is named by its path, as a client writes it', () => {
  const check = bodyChecker(
    Type.Object({
      request: Type.Object({ seed: Type.Integer() }),
      requests: Type.Array(Type.Object({ input: Type.String() })),
    }),
  );
  assert.throws(() => check({ request: { seed: 'x' }, requests: [] }), {
    param: 'request.seed',
    message: 'request.seed: "x" is invalid; expected an integer',
  });
  assert.throws(() => check({ request: { seed: 1 }, requests: [{ input: 'a' }, { input: 3 }] }), {
    param: 'requests[1].input',
    message: 'requests[1].input: 3 is invalid; expected a string',
  });
  assert.throws(() => check({ requests: [] }), {
    param: 'request',
    message: "'request' is required: expected an object",
  });
});

test('a non-empty text field takes any non-empty string, a lone emoji or a large payload, and refuses ""; loading the schemas prints nothing', async () => {
  const check = bodyChecker(Type.Object({ audio_base64: Text() }));
  for (const value of ['x', '😀', 'A'.repeat(300_000)])
    assert.doesNotThrow(() => check({ audio_base64: value }));
  assert.throws(() => check({ audio_base64: '' }), /audio_base64/);
  // ajv is built with `unicode: false` (lengths in UTF-16 units): its deprecation warning is not printed.
  const { execFile } = await import('node:child_process');
  const schemaModule = new URL('../../../src/http/request/schema.js', import.meta.url).href;
  const stderr = await new Promise<string>((resolve, reject) =>
    execFile(
      process.execPath,
      ['--input-type=module', '-e', `await import(${JSON.stringify(schemaModule)})`],
      (err, _out, errText) => (err ? reject(err) : resolve(errText)),
    ),
  );
  assert.equal(stderr, '');
});
