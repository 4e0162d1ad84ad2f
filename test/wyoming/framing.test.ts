import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_JSON_DEPTH } from '../../src/util/json-text.js';
import { FrameReader, WyomingError } from '../../src/wyoming/framing.js';
import { longParses } from '../helpers/json-parses.js';

const arrays = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);

/** An event's bytes with its data block as given (JSON.stringify could not make a deep one). */
function rawEvent(type: string, dataText: string): Buffer {
  const data = Buffer.from(dataText);
  return Buffer.concat([Buffer.from(`${JSON.stringify({ type, data_length: data.length })}\n`), data]);
}

function refused(bytes: Buffer, code: string, pattern: RegExp): string {
  let message = '';
  assert.throws(
    () => new FrameReader().push(bytes),
    (err: WyomingError) => {
      assert.ok(err instanceof WyomingError, String(err));
      assert.equal(err.code, code);
      assert.match(err.message, pattern);
      message = err.message;
      return true;
    },
  );
  return message;
}

test('a data block or header nested past the limit is an invalid_event naming the field, never parsed', async () => {
  const parsed = await longParses(() => {
    // The probe's case (L3): 400,000 levels in audio-start's rate, within the 1 MiB data block.
    const message = refused(
      rawEvent('audio-start', `{"rate":${arrays(400_000)},"width":2,"channels":1}`),
      'invalid_event',
      /^data block: rate\[0\]\[0\].*: JSON nesting is deeper than 64 levels; voxd accepts at most 64$/,
    );
    assert.ok(message.length < 300, message);
    refused(
      Buffer.from(`{"type":"synthesize","data":{"text":${arrays(20_000)}}}\n`),
      'invalid_event',
      /^header line: data\.text\[0\]/,
    );
  });
  assert.equal(parsed, 0);
});

test('a data block as deep as the limit is read', () => {
  const [event] = new FrameReader().push(rawEvent('ping', `{"text":${arrays(MAX_JSON_DEPTH - 1)}}`));
  assert.equal(event?.type, 'ping');
  assert.equal(JSON.stringify(event?.data['text']), arrays(MAX_JSON_DEPTH - 1));
});

test('a bad type or length in a header is shown by a short start of it', () => {
  const long = 'x'.repeat(60_000);
  const typeMessage = refused(
    Buffer.from(`${JSON.stringify({ type: [long] })}\n`),
    'invalid_event',
    /^type: \["xxx.*\.\.\. is not an event type$/,
  );
  assert.ok(typeMessage.length < 200, `${typeMessage.length} characters`);
  const lengthMessage = refused(
    Buffer.from(`${JSON.stringify({ type: 'ping', data_length: long })}\n`),
    'invalid_event',
    /^data_length: "xxx.*\.\.\. is not a byte count$/,
  );
  assert.ok(lengthMessage.length < 200, `${lengthMessage.length} characters`);
});
