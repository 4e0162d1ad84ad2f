/**
 * The engine-call boundary: what an engine throws in its runner becomes a reply with a code
 * (failureReply), the session turns the reply back into a JobError (jobFailed), and engineFailure
 * maps the code to the catalogue, never the message: the same text under another code is another
 * error.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { failureReply, JobError, jobFailed } from '../../src/engines/job-error.js';
import { VoxdError } from '../../src/errors.js';
import { engineFailure } from '../../src/runtime/model-entry.js';

const across = (err: unknown) => engineFailure("model 'm' failed", jobFailed(failureReply(7, err)));

test('a reply carries the JobError code, engine_failed for anything else thrown', () => {
  assert.deepEqual(failureReply(7, new JobError('invalid_voice', 'voice: 9')), {
    id: 7,
    ok: false,
    message: 'voice: 9',
    code: 'invalid_voice',
  });
  assert.deepEqual(failureReply(7, new RangeError('boom')), {
    id: 7,
    ok: false,
    message: 'boom',
    code: 'engine_failed',
  });
  assert.deepEqual(failureReply(7, 'a string'), {
    id: 7,
    ok: false,
    message: 'a string',
    code: 'engine_failed',
  });
});

test('engineFailure maps by code: 400 naming voice or input, else a 500 that keeps its context', () => {
  const voice = across(new JobError('invalid_voice', 'voice: speaker 9 does not exist'));
  assert.deepEqual(
    [voice.code, voice.status, voice.param, voice.message],
    ['E_INVALID_REQUEST', 400, 'voice', 'voice: speaker 9 does not exist'],
  );
  const nothing = across(new JobError('no_audio', 'input: no audio for this text'));
  assert.deepEqual([nothing.status, nothing.param], [400, 'input']);
  // A fault whose text reads like a client's mistake is still the engine's.
  const fault = across(new Error('voice: speaker 9 does not exist'));
  assert.deepEqual(
    [fault.code, fault.status, fault.message],
    ['E_ENGINE', 500, "model 'm' failed: voice: speaker 9 does not exist"],
  );
  assert.ok(fault.cause instanceof JobError);
  const typed = new VoxdError('E_BUSY', 'busy');
  assert.equal(engineFailure('x', typed), typed, 'typed voxd errors pass through');
});
