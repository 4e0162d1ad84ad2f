import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { VoxdError } from '../../../src/errors.js';
import { frameRequest, readFrame } from '../../../src/http/bridge/frames.js';
import { MAX_JSON_DEPTH } from '../../../src/util/json-text.js';
import { longParses } from '../../helpers/json-parses.js';

const arrays = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);

async function invalid(run: () => Promise<unknown>, pattern: RegExp): Promise<void> {
  await assert.rejects(run, (err: VoxdError) => {
    assert.equal(err.code, 'E_INVALID_REQUEST');
    assert.match(err.message, pattern);
    return true;
  });
}

const frameObject = async (text: string) => (await readFrame(Buffer.from(text))).frame;

test('a frame nested deeper than a body and its envelope is refused before it is parsed', async () => {
  const parsed = await longParses(async () => {
    await invalid(
      () => frameObject(`{"id":1,"body_json":${arrays(1_000_000)}}`),
      /^body_json\[0\][[\]0]*\.\.\.: JSON nesting is deeper than 65 levels/,
    );
    await invalid(() => frameObject(arrays(100)), /^(\[0\]){65}: JSON nesting is deeper than 65 levels/);
  });
  assert.equal(parsed, 0);
});

test("an envelope's body_json may nest as deep as a body may; its JSON is made without a stack overflow", async () => {
  const bytes = Buffer.from(`{"id":"a","body_json":${arrays(MAX_JSON_DEPTH)}}`);
  const request = await frameRequest(await readFrame(bytes), bytes);
  assert.equal(Buffer.concat(request.body ?? []).toString(), arrays(MAX_JSON_DEPTH));
  await invalid(() => frameObject(`{"id":"a","body_json":${arrays(MAX_JSON_DEPTH + 1)}}`), /^body_json/);
});

test('frames that are not JSON objects keep their messages', async () => {
  await invalid(() => frameObject('{"id":'), /^a frame must be a JSON object; it is not JSON \(/);
  await invalid(() => frameObject('[1]'), /^a frame must be a JSON object, got an array$/);
  await invalid(() => frameObject('"[[["'), /^a frame must be a JSON object, got string$/);
});

test("a frame's long body and body_json strings are handed on as its bytes, decoded where they must be", async () => {
  const audio = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7) % 256));
  const text = `voix "é" ${'x'.repeat(300_000)}`;
  const read = async (frame: unknown) => {
    const bytes = Buffer.from(JSON.stringify(frame));
    const body = (await frameRequest(await readFrame(bytes), bytes)).body;
    return body && Buffer.concat(body);
  };
  assert.deepEqual(await read({ id: 1, body: audio.toString('base64'), body_encoding: 'base64' }), audio);
  // Escaped text (the quotes) is decoded; plain text is the frame's own bytes.
  assert.equal((await read({ id: 1, body: text }))?.toString(), text);
  assert.equal((await read({ id: 1, body: 'x'.repeat(300_000) }))?.toString(), 'x'.repeat(300_000));
  const json = {
    model: 'asr',
    audio_base64: audio.toString('base64'),
    note: text,
    list: ['y'.repeat(70_000)],
  };
  assert.deepEqual(JSON.parse((await read({ id: 2, body_json: json }))!.toString()), json);
  // A long query is read as a string, so its check sees it.
  await invalid(
    () => read({ id: 3, query: `a=${' '.repeat(300_000)}`, body_json: {} }),
    /^query: .* is not a query string/,
  );
  await invalid(
    () => read({ id: 4, body: `${audio.toString('base64').slice(0, -4)}!!!!`, body_encoding: 'base64' }),
    /^body: is not base64/,
  );
});
