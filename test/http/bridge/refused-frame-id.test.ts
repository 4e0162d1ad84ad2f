/**
 * The id echoed in the answer to a frame refused before it runs is read off its bytes without
 * parsing it whole, and is the id JSON.parse would give (frameId of the parsed frame).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { frameId } from '../../../src/http/bridge/frames.js';
import { refusedFrameId } from '../../../src/http/bridge/refused-frame-id.js';

const FRAMES = [
  '{"id":"a"}',
  '{"id":7}',
  '{"id":-1.5e3,"model":"x"}',
  ' {\n\t"id" :  "spaced" , "x": 1 }',
  '{"id":"esc\\"aped\\\\"}',
  '{"\\u0069d":"escaped key"}',
  '{"a":{"id":"inner"},"id":"outer"}',
  '{"a":{"id":"inner"}}',
  '{"body_json":{"id":5},"list":[{"id":6}]}',
  '{"x":"\\"id\\":1","id":2}',
  '{"x":"{\\"id\\":1","y":"]}"}',
  '{"id":"a","id":null}',
  '{"id":"a","id":"b"}',
  '{"id":true}',
  '{"id":[1]}',
  '{"id":{"id":3}}',
  '{"id":1e400}',
  '{"id":"ünï"}',
  '[{"id":1}]',
  '["id",1]',
  '"id"',
  '{}',
  `{"pad":"${'x'.repeat(100_000)}","id":"late"}`,
];

test('the id of a frame, read off its bytes, is what JSON.parse and frameId make of it', () => {
  for (const text of FRAMES) {
    const parsed = JSON.parse(text);
    const expected =
      typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? frameId(parsed) : null;
    assert.equal(refusedFrameId(Buffer.from(text)), expected, text.slice(0, 80));
  }
});

test('a frame that is not JSON has no id, or the one its bytes name', () => {
  assert.equal(refusedFrameId(Buffer.from('not json')), null);
  assert.equal(refusedFrameId(Buffer.from('{"id": "cut')), null);
  assert.equal(refusedFrameId(Buffer.from('{"id": "x", "pad": "unclosed')), 'x');
});
