/** The live routes' PCM format from the query: defaults, ranges, and the 400 naming the value. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { VoxdError } from '../../../src/errors.js';
import { LIVE_PCM_DEFAULTS, parseLivePcmFormat } from '../../../src/http/live/pcm-format.js';

describe('live PCM format', () => {
  const parse = (query: string) => parseLivePcmFormat(new URLSearchParams(query));
  const rejects = (query: string, message: RegExp) =>
    assert.throws(
      () => parse(query),
      (err: unknown) =>
        err instanceof VoxdError &&
        err.status === 400 &&
        message.test(err.message) &&
        err.param === query.split('=')[0],
    );

  test('defaults and valid values', () => {
    assert.deepEqual(parse('model=m'), { sampleRate: 16000, channels: 1, sampleFormat: 's16le' });
    assert.deepEqual(parse('model=m'), LIVE_PCM_DEFAULTS);
    assert.deepEqual(parse('sample_rate=1000&channels=16&sample_format=f32le'), {
      sampleRate: 1000,
      channels: 16,
      sampleFormat: 'f32le',
    });
    assert.equal(parse('sample_rate=384000').sampleRate, 384000);
  });

  test('a repeated parameter: the first occurrence counts', () => {
    assert.equal(parse('channels=2&channels=99').channels, 2);
  });

  test('integers are parsed in full and range-checked; the message names the parameter and value', () => {
    rejects(
      'sample_rate=16000junk',
      /^sample_rate: "16000junk" is invalid; expected an integer from 1000 to 384000$/,
    );
    rejects('sample_rate=999', /^sample_rate: "999"/);
    rejects('sample_rate=384001', /^sample_rate: "384001"/);
    rejects('sample_rate=', /^sample_rate: ""/);
    rejects('sample_rate=%2B16000', /^sample_rate: "\+16000"/);
    rejects('sample_rate=16000.0', /^sample_rate: "16000.0"/);
    rejects('channels=0', /^channels: "0" is invalid; expected an integer from 1 to 16$/);
    rejects('channels=17', /^channels: "17"/);
    rejects('sample_format=pcm', /^sample_format: "pcm" is invalid; expected one of: s16le, f32le$/);
  });
});
