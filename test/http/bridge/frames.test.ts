import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { VoxdError } from '../../../src/errors.js';
import { frameObject, frameRequest } from '../../../src/http/bridge/frames.js';
import { MAX_JSON_DEPTH } from '../../../src/util/json-text.js';

const arrays = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);

function invalid(run: () => unknown, pattern: RegExp): void {
  assert.throws(run, (err: VoxdError) => {
    assert.equal(err.code, 'E_INVALID_REQUEST');
    assert.match(err.message, pattern);
    return true;
  });
}

test('a frame nested deeper than a body and its envelope is refused before it is parsed', () => {
  const parse = JSON.parse;
  let parsed = 0;
  // Only the frame's text counts: a refusal's message reads its keys' literals with JSON.parse.
  JSON.parse = ((...args: Parameters<typeof JSON.parse>) => {
    if (args[0].length > 300) parsed++;
    return parse(...args);
  }) as typeof JSON.parse;
  try {
    invalid(
      () => frameObject(`{"id":1,"body_json":${arrays(1_000_000)}}`),
      /^body_json\[0\][[\]0]*\.\.\.: JSON nesting is deeper than 65 levels/,
    );
    invalid(() => frameObject(arrays(100)), /^(\[0\]){65}: JSON nesting is deeper than 65 levels/);
  } finally {
    JSON.parse = parse;
  }
  assert.equal(parsed, 0);
});

test("an envelope's body_json may nest as deep as a body may; its JSON is made without a stack overflow", () => {
  const text = `{"id":"a","body_json":${arrays(MAX_JSON_DEPTH)}}`;
  const request = frameRequest(frameObject(text), text);
  assert.equal(request.body?.toString(), arrays(MAX_JSON_DEPTH));
  invalid(() => frameObject(`{"id":"a","body_json":${arrays(MAX_JSON_DEPTH + 1)}}`), /^body_json/);
});

test('frames that are not JSON objects keep their messages', () => {
  invalid(() => frameObject('{"id":'), /^a frame must be a JSON object; it is not JSON \(/);
  invalid(() => frameObject('[1]'), /^a frame must be a JSON object, got an array$/);
  invalid(() => frameObject('"[[["'), /^a frame must be a JSON object, got string$/);
});
