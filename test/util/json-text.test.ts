import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import type { VoxdError } from '../../src/errors.js';
import {
  checkJsonShape,
  jsonShapeFault,
  MAX_JSON_DEPTH,
  MAX_JSON_VALUES,
  parseJsonText,
} from '../../src/util/json-text.js';

const arrays = (levels: number, inner = '') => '['.repeat(levels) + inner + ']'.repeat(levels);
const objects = (levels: number) => '{"a":'.repeat(levels - 1) + '{}' + '}'.repeat(levels - 1);

/**
 * Counts JSON.parse calls of long texts while a test runs: refused text must never reach it (a
 * refusal's message reads its keys' literals, of at most 202 characters, with JSON.parse).
 */
const realParse = JSON.parse;
let parses = 0;
JSON.parse = ((...args: Parameters<typeof JSON.parse>) => {
  if (args[0].length > 300) parses++;
  return realParse(...args);
}) as typeof JSON.parse;
afterEach(() => {
  parses = 0;
});

/** The 400 of `run`, whose message starts with `path` and says why. */
function refused(run: () => unknown, path: string): string {
  let message = '';
  assert.throws(run, (err: VoxdError) => {
    assert.equal(err.code, 'E_INVALID_REQUEST');
    message = err.message;
    return true;
  });
  assert.ok(message.startsWith(path), `expected ${path}, got ${message}`);
  assert.ok(message.includes(`: JSON nesting is deeper than ${MAX_JSON_DEPTH} levels;`), message);
  return message;
}

test('nesting of exactly MAX_JSON_DEPTH levels parses; one more is refused before any parse', () => {
  assert.equal(MAX_JSON_DEPTH, 64);
  assert.ok(Array.isArray(parseJsonText(arrays(64, '1'))));
  assert.equal(jsonShapeFault(objects(64)), undefined);
  parses = 0;
  refused(() => parseJsonText(arrays(65)), `${'[0]'.repeat(64)}: `);
  refused(() => parseJsonText(objects(65)), `a${'.a'.repeat(63)}: `);
  assert.equal(parses, 0);
});

test('a deep text is refused in one linear scan, never parsed (V8 takes ~1 µs a level to parse it)', () => {
  const deep = arrays(10_000_000);
  const started = performance.now();
  refused(() => parseJsonText(deep, 'options'), 'options[0][0]');
  // The old order (parse, then walk) took 10 s and more for these 20 MB.
  assert.ok(performance.now() - started < 1000, `${(performance.now() - started).toFixed(0)} ms`);
  assert.equal(parses, 0);
});

test('brackets inside strings, escaped quotes and escaped backslashes do not count', () => {
  const brackets = `{"a":"${'['.repeat(200)}","b":"\\"${'{'.repeat(200)}\\"","c":"\\\\","d":${arrays(62)}}`;
  assert.equal(jsonShapeFault(brackets), undefined);
  assert.equal((parseJsonText(brackets) as { a: string }).a.length, 200);
  // After `"\\\\"` (one escaped backslash) the string is closed: the brackets that follow count.
  refused(() => parseJsonText(`{"c":"\\\\","d":${arrays(64)}}`), `d${'[0]'.repeat(63)}`);
  // More than a few escaped quotes in one string (read a character at a time) skip the same.
  const q = `"[${'\\"'.repeat(100)}{"`;
  assert.equal(jsonShapeFault(JSON.stringify({ q, d: JSON.parse(arrays(63)) })), undefined);
  refused(() => parseJsonText(JSON.stringify({ q, d: JSON.parse(arrays(64)) })), `d${'[0]'.repeat(63)}: `);
});

test('the refused path names the field, the keys as parsed (escapes read) and the indexes, cut short', () => {
  const text = `{"model":"m","options":{"x":[1,{"w\\u00e9ird key":${arrays(62)}}]}}`;
  // body (1) > options (2) > x (3) > [1] (4) > "wéird key" (5): 62 more levels make 66.
  refused(() => parseJsonText(text), `${`options.x[1]["wéird key"]${'[0]'.repeat(60)}`.slice(0, 197)}...: `);
  const message = refused(() => parseJsonText(`{"x":${arrays(70)}}`, 'options'), 'options.x[0]');
  assert.ok(message.length < 400, message);
  // A megabyte-long key is shown by its start.
  const long = refused(() => parseJsonText(`{"${'k'.repeat(1 << 20)}":${arrays(70)}}`), 'kkk');
  assert.ok(long.length < 400, `${long.length} characters`);
  // A body that is only deep: its path is the indexes.
  refused(() => parseJsonText(arrays(100)), '[0][0][0]');
});

test('the limit is a parameter (a bridge frame wraps a body: one level more)', () => {
  assert.equal(jsonShapeFault(arrays(65), { limit: 65 }), undefined);
  assert.match(
    jsonShapeFault(arrays(66), { limit: 65 }) ?? '',
    /deeper than 65 levels; voxd accepts at most 65$/,
  );
  assert.throws(
    () => checkJsonShape(arrays(3), { limit: 2, field: 'event' }),
    /^VoxdError: event\[0\]\[0\]: /,
  );
});

test('malformed text is left to JSON.parse, whose message it keeps', () => {
  // An unterminated string: no depth is known past it, and the parse says what is wrong.
  assert.equal(jsonShapeFault(`["${arrays(100)}`), undefined);
  assert.throws(() => parseJsonText(`["${arrays(100)}`), /request body is not valid JSON/);
  assert.throws(
    () => parseJsonText('{"a":', 'options'),
    /^VoxdError: options: "{\\"a\\":" is not valid JSON/,
  );
  // Numbers past a double are still refused after the parse.
  assert.throws(() => parseJsonText('{"a":[1e400]}'), /a\[0\]: number out of range/);
});

test('width: MAX_JSON_VALUES values parse; one more is refused before any parse, strings not counted', () => {
  assert.equal(MAX_JSON_VALUES, 100_000);
  // The array's opening and its n - 1 separators: n values as counted.
  const wide = (n: number) => `[${'1,'.repeat(n - 1)}1]`;
  assert.ok(Array.isArray(parseJsonText(wide(MAX_JSON_VALUES))));
  parses = 0;
  assert.throws(
    () => parseJsonText(wide(MAX_JSON_VALUES + 1), 'options'),
    (err: VoxdError) =>
      err.code === 'E_INVALID_REQUEST' &&
      err.message ===
        `options: JSON has more than ${MAX_JSON_VALUES} values; voxd accepts at most ${MAX_JSON_VALUES}`,
  );
  assert.equal(parses, 0, 'refused text is never parsed');
  // Commas and brackets inside a string are text, not values.
  assert.equal(jsonShapeFault(JSON.stringify({ text: ',[{'.repeat(MAX_JSON_VALUES) })), undefined);
});
