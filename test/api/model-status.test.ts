/** A model's GET /v1/models status built from a runtime snapshot alone: its exact JSON text. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { modelStatus } from '../../src/api/model-status.js';
import type { ModelSnapshot } from '../../src/runtime/model-snapshot.js';

const MIB = 1024 * 1024;

function snapshot(overrides: Partial<ModelSnapshot> = {}): ModelSnapshot {
  return {
    id: 'asr',
    family: 'fixture',
    task: 'asr',
    mode: 'offline',
    path: '/models/asr',
    loaded: true,
    state: 'ready',
    lastError: undefined,
    slots: 3,
    activeSlots: 2,
    queuedRequests: 5,
    poolSize: 3,
    isolation: 'session',
    memoryEstimateBytes: 10 * MIB + 1,
    runnerProcessIds: [4242],
    sessionOptions: { beam: '2' },
    ...overrides,
  };
}

test('the parallel runtime shows the slot fields between mode and loaded; memory in whole MiB, rounded up', () => {
  assert.equal(
    JSON.stringify(modelStatus(snapshot(), true)),
    '{"id":"asr","family":"fixture","task":"asr","mode":"offline","slots":3,"active_slots":2,' +
      '"queued_requests":5,"max_parallel_slots":3,"loaded":true,"path":"/models/asr","state":"ready",' +
      '"isolation":"session","memory_estimate_mb":11,"session_options":{"beam":"2"}}',
  );
});

test('the serial runtime hides the slot fields; last_error follows state; no estimate is null', () => {
  const unloaded = snapshot({
    loaded: false,
    state: 'unloaded',
    lastError: 'the engine crashed',
    poolSize: null,
    memoryEstimateBytes: null,
    sessionOptions: {},
  });
  assert.equal(
    JSON.stringify(modelStatus(unloaded, false)),
    '{"id":"asr","family":"fixture","task":"asr","mode":"offline","loaded":false,"path":"/models/asr",' +
      '"state":"unloaded","last_error":"the engine crashed","isolation":"session","memory_estimate_mb":null,' +
      '"session_options":{}}',
  );
});

test('an unloaded parallel model shows max_parallel_slots null', () => {
  const status = modelStatus(snapshot({ loaded: false, state: 'unloaded', poolSize: null }), true);
  assert.equal(status.max_parallel_slots, null);
  assert.equal('max_parallel_slots' in status, true);
});
