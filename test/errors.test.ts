import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { WavError } from '../src/audio/wav-decode.js';
import { ConfigError } from '../src/config/errors.js';
import {
  ERROR_CODES,
  invalidField,
  invalidRequest,
  MAX_ERROR_MESSAGE_CHARS,
  notFound,
  unknownModel,
  VoxdError,
} from '../src/errors.js';
import { toHttp } from '../src/http/transport/errors.js';

const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');

test('docs/errors.md lists every error code with its status, type and wire code, and no other', () => {
  const rows = [...doc.matchAll(/^\| `(E_[A-Z_]+)` \| (\d+) \| `([a-z_]+)` \| `([a-z_]+)` \|/gm)].map((m) => [
    m[1],
    Number(m[2]),
    m[3],
    m[4],
  ]);
  const expected = Object.entries(ERROR_CODES).map(([code, { status, type, apiCode }]) => [
    code,
    status,
    type,
    apiCode,
  ]);
  assert.deepEqual(rows.sort(), expected.sort());
});

test('each wire code names one catalogue code, so a client can branch on it', () => {
  const apiCodes = Object.values(ERROR_CODES).map((entry) => entry.apiCode);
  assert.equal(new Set(apiCodes).size, apiCodes.length);
});

test('toHttp maps typed errors, client input errors and unknown faults', () => {
  const busy = toHttp(new VoxdError('E_BUSY', 'model busy'));
  assert.deepEqual(
    [busy.status, busy.body],
    [503, { error: { message: 'model busy', type: 'server_busy', param: null, code: 'server_busy' } }],
  );
  const config = toHttp(ConfigError.invalid('slots', 0, 'an integer'));
  assert.deepEqual(
    [config.status, config.body.error.param, config.body.error.code],
    [400, 'slots', 'invalid_request'],
  );
  assert.deepEqual(toHttp(new WavError('not a WAV file')).body.error, {
    message: 'not a WAV file',
    type: 'invalid_request_error',
    param: null,
    code: 'invalid_request',
  });
  const fault = toHttp(new TypeError('secret internals'));
  assert.deepEqual(
    [fault.status, fault.body.error, fault.internal],
    [
      500,
      { message: 'internal server error', type: 'server_error', param: null, code: 'internal_error' },
      true,
    ],
  );
});

test('error.param: the field the throw site or the validator names, never one read out of the message', () => {
  const param = (err: unknown) => toHttp(err).body.error.param;
  assert.equal(param(new VoxdError('E_INVALID_REQUEST', 'bad', { param: 'voice' })), 'voice');
  assert.equal(param(unknownModel('nope')), 'model');
  assert.equal(param(invalidField('seed', 'seed: number out of range')), 'seed');
  assert.equal(
    param(invalidField('requests[0].input', 'requests[0].input: "" is invalid')),
    'requests[0].input',
  );
  assert.equal(param(ConfigError.invalid('models[0].slots', 0, 'an integer')), 'models[0].slots');
  // A CLI flag is no field of a request.
  assert.equal(param(ConfigError.invalid('--port', 'x', 'a port')), null);
  // The message is not read: an error that names no field has none, whatever its words.
  assert.equal(param(invalidRequest('seed: number out of range')), null);
  assert.equal(param(invalidRequest("'file' is required: expected a WAV upload")), null);
  assert.equal(param(new WavError('fmt: not a WAV file')), null);
  assert.equal(param(new VoxdError('E_ENGINE', 'load: the engine crashed')), null);
  assert.equal(param(notFound('unknown endpoint: /v1/nope')), null);
});

test('toHttp caps every message, so a message that echoes megabytes cannot reach a client', () => {
  const huge = 'x'.repeat(1_000_000);
  for (const err of [new VoxdError('E_NOT_FOUND', huge), ConfigError.rejected(huge, 1, huge)]) {
    const { message } = toHttp(err).body.error;
    assert.equal(message.length, MAX_ERROR_MESSAGE_CHARS);
    assert.ok(message.endsWith('...'));
  }
});
