/**
 * A JSON body's large base64 audio left as its bytes (src/http/request/lifted-fields.ts): lifted
 * only where the cut gives the field back exactly (the body's or its request's `audio_base64`, a
 * large literal without escapes), every other body parsed as before, with the same errors.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LIFT_MIN_BYTES, parseLifting, takeLiftedField } from '../../../src/http/request/lifted-fields.js';
import { parseJsonText } from '../../../src/util/json-text.js';

const payload = Buffer.from(Array.from({ length: LIFT_MIN_BYTES }, (_, i) => i % 256)).toString('base64');
const parse = (text: string) => parseJsonText(text);
const lift = (json: string) => parseLifting(Buffer.from(json), parse) as Record<string, unknown>;

test('a large audio_base64, flat or in request, is lifted: its bytes beside the parsed body, the rest parsed as it was', () => {
  const flat = lift(`{"model": "asr", "audio_base64" : "${payload}", "language":"é"}`);
  assert.equal(flat['model'], 'asr');
  assert.equal(flat['language'], 'é');
  assert.notEqual(flat['audio_base64'], payload);
  assert.equal(Buffer.from(takeLiftedField(flat, 'audio_base64')!.bytes).toString('latin1'), payload);
  assert.equal(takeLiftedField(flat, 'audio_base64'), undefined, 'handed out once');

  const nested = lift(`{"model":"asr","request":{"text":"x","audio_base64":"${payload}"}}`);
  const request = nested['request'] as Record<string, unknown>;
  assert.equal(request['text'], 'x');
  assert.equal(Buffer.from(takeLiftedField(request, 'audio_base64')!.bytes).toString('latin1'), payload);
  assert.equal(takeLiftedField(nested, 'audio_base64'), undefined);
});

test("a literal may be moved to a thread only where the body's memory is its own", () => {
  const json = `{"model":"asr","audio_base64":"${payload}"}`;
  // Buffer.from of a large string: memory of its own, as a body joined from its chunks.
  assert.equal(takeLiftedField(lift(json), 'audio_base64')!.movable, true);
  // A body in a larger read (the request's headers before it, another request after it).
  const read = Buffer.from(`POST / HTTP/1.1\r\n\r\n${json}GET / HTTP/1.1\r\n\r\n`);
  const start = read.indexOf('{');
  const shared = parseLifting(read.subarray(start, start + Buffer.byteLength(json)), parse) as object;
  const literal = takeLiftedField(shared, 'audio_base64')!;
  assert.equal(literal.movable, false);
  assert.equal(Buffer.from(literal.bytes).toString('latin1'), payload);
});

test('anything else is parsed whole: escapes, small literals, other places, other keys; errors are the ones the whole text gives', () => {
  const cases = [
    // An escape: the characters are not the bytes.
    `{"audio_base64":"${payload.replace(/\//g, '\\/')}"}`,
    // Too small to be worth it.
    `{"audio_base64":"${payload.slice(0, 1000)}","pad":"${'x'.repeat(LIFT_MIN_BYTES)}"}`,
    // In a batch, or a key that only ends like it.
    `{"requests":[{"audio_base64":"${payload}"}]}`,
    `{"x\\"audio_base64":"${payload}"}`,
    // The first occurrence is nested, the top-level one is another.
    `{"other":{"audio_base64":"${payload}"},"audio_base64":"${payload}"}`,
  ];
  for (const json of cases) {
    const parsed = lift(json);
    assert.deepEqual(parsed, JSON.parse(json), json.slice(0, 40));
    assert.equal(takeLiftedField(parsed, 'audio_base64'), undefined, json.slice(0, 40));
  }
  for (const bad of [
    `{"audio_base64":"${payload}",}`,
    `{"audio_base64":"${payload}"`,
    `[{"audio_base64":"${payload}"}]x`,
  ]) {
    let want = '';
    try {
      parse(bad);
    } catch (err) {
      want = (err as Error).message;
    }
    assert.ok(want.length > 0);
    assert.throws(
      () => lift(bad),
      (err: Error) => err.message === want,
    );
  }
});
