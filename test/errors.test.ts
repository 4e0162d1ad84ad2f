import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { WavError } from '../src/audio/wav-decode.js';
import { ConfigError } from '../src/config/errors.js';
import { ERROR_CODES, VoxdError } from '../src/errors.js';
import { MAX_ERROR_MESSAGE_CHARS, toHttp } from '../src/http/errors.js';

const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');

test('docs/errors.md lists every error code with its status and type, and no other', () => {
  const rows = [...doc.matchAll(/^\| `(E_[A-Z_]+)` \| (\d+) \| `([a-z_]+)` \|/gm)].map((m) => [
    m[1],
    Number(m[2]),
    m[3],
  ]);
  const expected = Object.entries(ERROR_CODES).map(([code, { status, type }]) => [code, status, type]);
  assert.deepEqual(rows.sort(), expected.sort());
});

test('toHttp maps typed errors, client input errors and unknown faults', () => {
  const busy = toHttp(new VoxdError('E_BUSY', 'model busy'));
  assert.deepEqual(
    [busy.status, busy.body],
    [503, { error: { message: 'model busy', type: 'server_busy' } }],
  );
  assert.equal(toHttp(ConfigError.invalid('slots', 0, 'an integer')).status, 400);
  assert.equal(toHttp(new WavError('not a WAV file')).body.error.type, 'invalid_request_error');
  const fault = toHttp(new TypeError('secret internals'));
  assert.deepEqual(
    [fault.status, fault.body.error.message, fault.internal],
    [500, 'internal server error', true],
  );
});

test('toHttp caps every message, so a message that echoes megabytes cannot reach a client', () => {
  const huge = 'x'.repeat(1_000_000);
  for (const err of [new VoxdError('E_NOT_FOUND', huge), ConfigError.rejected(huge, 1, huge)]) {
    const { message } = toHttp(err).body.error;
    assert.equal(message.length, MAX_ERROR_MESSAGE_CHARS);
    assert.ok(message.endsWith('...'));
  }
});
