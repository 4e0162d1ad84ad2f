/**
 * The reader of a client's JSON message of any size (src/util/json-reader.ts): long literals cut
 * out before the parse and given back as bytes (the keys a reader keeps) or as the very strings
 * JSON.parse makes; the depth, width and skeleton refusals before any parse; the slices.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodePaddedBase64 } from '../../src/audio/base64.js';
import type { VoxdError } from '../../src/errors.js';
import {
  keepPlain,
  LIFT_MIN_BYTES,
  liftedJson,
  MAX_SKELETON_BYTES,
  type ReadOptions,
  readJson,
  SLICE_BYTES,
  takeLifted,
} from '../../src/util/json-reader.js';
import { MAX_JSON_VALUES } from '../../src/util/json-text.js';
import { longParses } from '../helpers/json-parses.js';

const payload = Buffer.from(Array.from({ length: SLICE_BYTES }, (_, i) => (i * 31) % 256)).toString('base64');
const read = async (json: string, options: ReadOptions = {}) =>
  (await readJson(Buffer.from(json), options)).value as Record<string, unknown>;

async function refused(json: string, pattern: RegExp, options: ReadOptions = {}): Promise<void> {
  await assert.rejects(readJson(Buffer.from(json), options), (err: VoxdError) => {
    assert.equal(err.code, 'E_INVALID_REQUEST');
    assert.match(err.message, pattern);
    return true;
  });
}

test('a kept key, flat or nested, is its bytes beside the parsed message, handed out once; the rest parses as it was', async () => {
  const keep = keepPlain('audio_base64');
  const flat = await read(`{"model": "asr", "audio_base64" : "${payload}", "language":"é"}`, { keep });
  assert.equal(flat['model'], 'asr');
  assert.equal(flat['language'], 'é');
  assert.notEqual(flat['audio_base64'], payload);
  assert.equal(Buffer.from(takeLifted(flat, 'audio_base64')!.bytes).toString('latin1'), payload);
  assert.equal(takeLifted(flat, 'audio_base64'), undefined, 'handed out once');

  const nested = await read(`{"model":"asr","request":{"text":"x","audio_base64":"${payload}"}}`, { keep });
  const request = nested['request'] as Record<string, unknown>;
  assert.equal(request['text'], 'x');
  assert.equal(Buffer.from(takeLifted(request, 'audio_base64')!.bytes).toString('latin1'), payload);
});

test('a message shorter than one slice still has its kept literal cut out: no string of the audio is made', async () => {
  const keep = keepPlain('audio_base64');
  const short = payload.slice(0, LIFT_MIN_BYTES * 2);
  const json = `{"model":"vad","audio_base64":"${short}","note":"${'n'.repeat(LIFT_MIN_BYTES)}"}`;
  assert.ok(json.length < SLICE_BYTES);
  const value = await read(json, { keep });
  assert.equal(Buffer.from(takeLifted(value, 'audio_base64')!.bytes).toString('latin1'), short);
  // A long literal the reader does not keep is the string JSON.parse makes, as before.
  assert.equal(value['note'], 'n'.repeat(LIFT_MIN_BYTES));
  // Without a keep rule, a message of one slice is parsed whole, as it always was.
  assert.equal((await read(json))['audio_base64'], short);
});

test("a literal may be moved to a thread only where the message's memory is its own", async () => {
  const json = `{"model":"asr","audio_base64":"${payload}"}`;
  const keep = keepPlain('audio_base64');
  assert.equal(takeLifted(await read(json, { keep }), 'audio_base64')!.movable, true);
  // A body in a larger read (the request's headers before it, another request after it).
  const whole = Buffer.from(`POST / HTTP/1.1\r\n\r\n${json}GET / HTTP/1.1\r\n\r\n`);
  const start = whole.indexOf('{');
  const { value } = await readJson(whole.subarray(start, start + Buffer.byteLength(json)), { keep });
  const literal = takeLifted(value as object, 'audio_base64')!;
  assert.equal(literal.movable, false);
  assert.equal(Buffer.from(literal.bytes).toString('latin1'), payload);
});

test('every literal not kept is the string JSON.parse makes, escapes and characters cut across slices included', async () => {
  // Escapes of every kind and multi-byte characters, long enough to span several slices.
  const unit = 'a\\"b\\\\c\\/d\\u00e9\\ud83d\\ude00 é€😀 \\n';
  const escaped = `"${unit.repeat(Math.ceil((3 * SLICE_BYTES) / unit.length))}"`;
  const plain = `"${'é€😀x'.repeat(SLICE_BYTES / 4)}"`;
  const cases = [
    `{"audio_base64":${escaped},"other":${plain}}`,
    `{"requests":[{"audio_base64":"${payload}"}],"x":[${plain},${escaped}]}`,
    `${plain}`,
    `[${escaped}, 1, true, null, {"k": ${plain}}]`,
  ];
  for (const json of cases) {
    const { value } = await readJson(Buffer.from(json), { keep: keepPlain('nothing') });
    assert.deepEqual(value, JSON.parse(json), json.slice(0, 40));
  }
  // A kept key whose literal has escapes is a string too: its bytes are not its characters.
  const value = await read(`{"audio_base64":${escaped}}`, { keep: keepPlain('audio_base64') });
  assert.equal(value['audio_base64'], JSON.parse(escaped));
  assert.equal(takeLifted(value, 'audio_base64'), undefined);
});

test('liftedJson puts kept bytes back: the same JSON, without a string of them made', async () => {
  const json = {
    id: 1,
    body_json: { model: 'asr', audio_base64: payload, note: `é "q" ${'x'.repeat(LIFT_MIN_BYTES)}` },
  };
  const { value, literals } = await readJson(Buffer.from(JSON.stringify(json)), { keep: () => true });
  assert.equal(literals.size, 2);
  const frame = value as Record<string, unknown>;
  assert.deepEqual(
    JSON.parse(Buffer.concat(liftedJson(frame['body_json'], literals)).toString()),
    json.body_json,
  );
});

test('too deep, too wide, too much outside long strings, a string that never closes: 400s before any parse', async () => {
  const pad = `"${'p'.repeat(SLICE_BYTES)}"`;
  const parsed = await longParses(async () => {
    await refused(
      `{"pad":${pad},"x":${'['.repeat(70)}${']'.repeat(70)}}`,
      /^x(\[0\]){63}: JSON nesting is deeper than 64 levels/,
    );
    await refused(
      `{"pad":${pad},"x":${'['.repeat(70)}${']'.repeat(70)}}`,
      /^event\.x(\[0\]){63}: JSON nesting/,
      { field: 'event' },
    );
    await refused(
      `{"pad":${pad},"x":[${'0,'.repeat(MAX_JSON_VALUES)}0]}`,
      /^request body: JSON has more than 100000 values/,
    );
    await refused(
      `{"pad":${pad},"x":"${'s'.repeat(100)}`,
      /^request body is not valid JSON: the string that opens at byte \d+ never closes/,
    );
    await refused(
      `{"pad":${pad},"x":[${'1'.repeat(MAX_SKELETON_BYTES)}]}`,
      /^request body: more than 4194304 bytes of JSON outside strings/,
    );
    await refused(
      `{"${'k'.repeat(LIFT_MIN_BYTES)}":${pad}}`,
      /^request body: a key of 16384 bytes \("kkkk.*"\); keys are names, of less than 16384 bytes$/,
    );
  });
  assert.equal(parsed, 0, 'no refused text was parsed');
  // Malformed JSON is still JSON.parse's error, on the skeleton.
  await refused(`{"pad":${pad},}`, /^request body is not valid JSON: /);
});

test('a message of many slices lets the event loop turn while it is read', async () => {
  let turns = 0;
  const ticker = setInterval(() => turns++, 0);
  try {
    const json = `{"type":"x","audio":"${payload.repeat(8)}","n":[${'1,'.repeat(50_000)}1]}`;
    const { value } = await readJson(Buffer.from(json), { keep: keepPlain('audio') });
    assert.equal((value as Record<string, unknown>)['type'], 'x');
  } finally {
    clearInterval(ticker);
  }
  assert.ok(turns > 0, 'the loop turned');
});

test('decodePaddedBase64 decodes across its slices and refuses what is not strict base64', async () => {
  const bytes = Buffer.from(Array.from({ length: 3 * SLICE_BYTES + 2 }, (_, i) => (i * 13) % 256));
  const text = bytes.toString('base64');
  assert.deepEqual(await decodePaddedBase64(Buffer.from(text)), bytes);
  // Padding in the middle, a character outside base64 in a later slice, a length not a multiple of 4.
  const middle = `${text.slice(0, SLICE_BYTES - 4)}AA==${text.slice(SLICE_BYTES)}`;
  assert.equal(await decodePaddedBase64(Buffer.from(middle)), undefined);
  const bad = `${text.slice(0, 2 * SLICE_BYTES)}!${text.slice(2 * SLICE_BYTES + 1)}`;
  assert.equal(await decodePaddedBase64(Buffer.from(bad)), undefined);
  assert.equal(await decodePaddedBase64(Buffer.from(text.slice(1))), undefined);
  assert.equal(await decodePaddedBase64(Buffer.from(`${text.slice(0, -4)}é===`)), undefined);
});
