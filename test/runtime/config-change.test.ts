/** What a reconfiguration must redo, decided from the old and new configs alone. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ModelConfig } from '../../src/config/types.js';
import { compareConfigs, sameLoadInputs } from '../../src/runtime/config-change.js';

function model(overrides: Partial<ModelConfig> = {}): ModelConfig {
  return {
    id: 'asr',
    family: 'fixture',
    path: '/models/asr',
    task: 'asr',
    mode: 'offline',
    lazy: false,
    load_options: { threads: '2', beam: '4' },
    session_options: { language: 'en' },
    default_request_options: { temperature: '0' },
    voice_presets: {},
    ...overrides,
  };
}

test('the same config, its maps written in another key order, is the same', () => {
  const reordered = model({ load_options: { beam: '4', threads: '2' } });
  assert.equal(compareConfigs(model(), reordered), 'same');
});

test('a request-time setting alone changes metadata, not the pool', () => {
  assert.equal(compareConfigs(model(), model({ busy_timeout_ms: 100 })), 'metadata');
  assert.equal(compareConfigs(model(), model({ default_request_options: { temperature: '1' } })), 'metadata');
});

test('a load input or the slot count needs a reload', () => {
  assert.equal(compareConfigs(model(), model({ load_options: { threads: '2' } })), 'reload');
  assert.equal(compareConfigs(model(), model({ session_options: { language: 'de' } })), 'reload');
  assert.equal(compareConfigs(model(), model({ weight: 'q8' })), 'reload');
  assert.equal(compareConfigs(model(), model({ slots: 2 })), 'reload');
  // slots 1 written out is the default slot count: the pool stays.
  assert.notEqual(compareConfigs(model({ slots: 1 }), model()), 'reload');
});

test('a new slot count alone keeps the load inputs, so the live capacity still applies', () => {
  assert.equal(sameLoadInputs(model(), model({ slots: 4 })), true);
  assert.equal(sameLoadInputs(model(), model({ isolation: 'model' })), false);
});
