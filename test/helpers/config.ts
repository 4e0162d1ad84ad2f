/** Assertions shared by the config tests (test/config/*.test.ts). */
import assert from 'node:assert/strict';
import { ConfigError } from '../../src/config/errors.js';
import { showValue } from '../../src/errors.js';

/** Runs fn, expects a one-line ConfigError for `key` whose message shows the value and each fragment. */
export function expectConfigError(
  fn: () => unknown,
  key: string,
  value: unknown,
  ...fragments: string[]
): ConfigError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof ConfigError, `expected a ConfigError, got ${String(caught)}`);
  assert.equal(caught.key, key);
  assert.ok(caught.message.includes(key), `"${caught.message}" does not name ${key}`);
  const shown = value === undefined ? 'missing' : showValue(value);
  assert.ok(caught.message.includes(shown), `"${caught.message}" does not show ${shown}`);
  for (const fragment of fragments) {
    assert.ok(caught.message.includes(fragment), `"${caught.message}" lacks "${fragment}"`);
  }
  assert.ok(!caught.message.includes('\n'));
  return caught;
}
