/**
 * The model lifecycle's edge table, pair by pair: a model is loaded, published, drained and
 * unloaded in that order, and a failed load goes back to unloaded. Any other edge would let a
 * request see a half-built or half-torn-down pool (an `unloading -> ready` edge, for one, would
 * republish sessions being closed), so a change to the table must change this test too.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { canTransition, type ModelStateKind } from '../../src/runtime/model-state.js';

const KINDS: readonly ModelStateKind[] = ['unloaded', 'loading', 'ready', 'unloading'];

/** The edges the contract allows; every pair not listed is refused. */
const ALLOWED = new Set([
  'unloaded->loading',
  'loading->ready',
  'loading->unloaded',
  'ready->unloading',
  'unloading->unloaded',
]);

test('canTransition allows exactly the lifecycle edges, and refuses the other 11 pairs', () => {
  const refused: string[] = [];
  for (const from of KINDS)
    for (const to of KINDS) {
      const edge = `${from}->${to}`;
      assert.equal(canTransition(from, to), ALLOWED.has(edge), edge);
      if (!ALLOWED.has(edge)) refused.push(edge);
    }
  assert.equal(refused.length, 11);
  assert.ok(refused.includes('unloading->ready') && refused.includes('ready->ready'));
});
