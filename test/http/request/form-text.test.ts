/**
 * Form text read as its schema's types before the check (src/http/request/form-text.ts), and the
 * form checker's 400s: each names the field as the client names it and shows the text it sent.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Type } from '@sinclair/typebox';
import type { VoxdError } from '../../../src/errors.js';
import { formObject, readText } from '../../../src/http/request/form-text.js';
import {
  BoolLike,
  BusyTimeout,
  formChecker,
  OneOf,
  Optional,
  Text,
} from '../../../src/http/request/schema.js';
import { TranscriptionForm } from '../../../src/http/schemas/transcription-request.js';

test('text is read as the first kind of its field that it spells, else stays text', () => {
  const integer = Type.Integer();
  assert.equal(readText('16000', integer, 'n'), 16000);
  // Digits only: a sign or a tail keeps it text, which the schema then refuses.
  assert.equal(readText('+16000', integer, 'n'), '+16000');
  assert.equal(readText('16000junk', integer, 'n'), '16000junk');
  assert.equal(readText('0.25', Type.Number(), 'n'), 0.25);
  assert.equal(readText('True', Type.Boolean(), 'b'), true);
  assert.equal(readText('0', Type.Boolean(), 'b'), false);
  assert.equal(readText('maybe', Type.Boolean(), 'b'), 'maybe');
  assert.deepEqual(readText('{"a":1}', Type.Object({}), 'options'), { a: 1 });
  // A string branch keeps what no other branch spells ("auto"); an object branch takes JSON text.
  const strategy = Type.Union([Type.Literal('auto'), Type.Object({ type: Type.String() })]);
  assert.equal(readText('auto', strategy, 'chunking_strategy'), 'auto');
  assert.deepEqual(readText('{"type":"server_vad"}', strategy, 'chunking_strategy'), { type: 'server_vad' });
  // A plain string field is never read: "1" stays "1".
  assert.equal(readText('1', Type.String(), 's'), '1');
  assert.throws(
    () => readText('{not json', Type.Object({}), 'options'),
    (err: VoxdError) =>
      err.param === 'options' && err.message.startsWith('options: "{not json" is not valid JSON'),
  );
});

test('a form: repeated name[] parts are a list, a file part stands as its name, a text field is no upload', () => {
  const lists = new Map([
    ['model', ['asr']],
    ['temperature', ['0.3']],
    ['timestamp_granularities[]', ['word', 'segment']],
    ['file', ['/etc/hostname']],
  ]);
  const { value, text } = formObject({ lists, files: [] }, TranscriptionForm);
  assert.deepEqual(
    { ...value },
    { model: 'asr', temperature: 0.3, 'timestamp_granularities[]': ['word', 'segment'] },
  );
  assert.equal(text['temperature'], '0.3');
  const upload = formObject({ lists, files: [{ field: 'file', filename: 'a.wav' }] }, TranscriptionForm);
  assert.equal(upload.value['file'], 'a.wav');
});

test('formChecker: the fields typed, or a 400 naming the field and showing the text sent', () => {
  const check = formChecker(
    Type.Object({
      model: Text(),
      stream: Optional(BoolLike()),
      busy_timeout_ms: Optional(BusyTimeout()),
      'include[]': Type.Optional(Type.Array(OneOf(['logprobs']))),
    }),
  );
  const parts = (fields: Record<string, string[]>) => ({ lists: new Map(Object.entries(fields)), files: [] });
  const ok = check(parts({ model: ['m'], stream: ['1'], busy_timeout_ms: ['250'] }));
  assert.deepEqual([ok.stream, ok.busy_timeout_ms], [true, 250]);
  const refused = (fields: Record<string, string[]>) => {
    try {
      check(parts(fields));
    } catch (err) {
      return [(err as VoxdError).param, (err as VoxdError).message];
    }
    assert.fail('accepted');
  };
  assert.deepEqual(refused({ model: ['m'], stream: ['maybe'] }), [
    'stream',
    'stream: "maybe" is invalid; expected true or false',
  ]);
  assert.deepEqual(refused({}), ['model', "'model' is required: expected a non-empty string"]);
  // A repeated part is named by its field, not by its index, and the bad item is shown.
  assert.deepEqual(refused({ model: ['m'], 'include[]': ['logprobs', 'everything'] }), [
    'include[]',
    'include[]: "everything" is invalid; expected one of: logprobs',
  ]);
});
