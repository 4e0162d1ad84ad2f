import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, keyPath } from '../../src/config/errors.js';
import { stringifyOption, toOptionMap } from '../../src/config/options.js';

test('stringifyOption: strings as-is, bools as words', () => {
  assert.equal(stringifyOption('hello world'), 'hello world');
  assert.equal(stringifyOption(''), '');
  assert.equal(stringifyOption(true), 'true');
  assert.equal(stringifyOption(false), 'false');
});

test('stringifyOption: integral numbers below 2^53 print as plain digits', () => {
  assert.equal(stringifyOption(4), '4');
  assert.equal(stringifyOption(4.0), '4');
  assert.equal(stringifyOption(-12), '-12');
  assert.equal(stringifyOption(-0), '0');
  assert.equal(stringifyOption(2 ** 53 - 1), '9007199254740991');
  assert.equal(stringifyOption(1e20), '100000000000000000000');
});

test('stringifyOption: other numbers use JSON number text', () => {
  assert.equal(stringifyOption(0.5), '0.5');
  assert.equal(stringifyOption(-1.25), '-1.25');
  assert.equal(stringifyOption(1e21), '1e+21');
  assert.equal(stringifyOption(2 ** 53), '9007199254740992');
  assert.equal(stringifyOption(1e-7), '1e-7');
});

test('stringifyOption: objects and arrays become compact JSON', () => {
  assert.equal(stringifyOption({ a: 1, b: [true, null, 'x'] }), '{"a":1,"b":[true,null,"x"]}');
  assert.equal(stringifyOption([1, 2.5]), '[1,2.5]');
  assert.equal(stringifyOption({}), '{}');
});

test('stringifyOption: null and undefined are skipped', () => {
  assert.equal(stringifyOption(null), undefined);
  assert.equal(stringifyOption(undefined), undefined);
});

test('stringifyOption: values with no JSON form throw', () => {
  assert.throws(() => stringifyOption(Number.NaN), TypeError);
  assert.throws(() => stringifyOption(10n), TypeError);
});

test('toOptionMap flattens and drops nulls', () => {
  const map = toOptionMap(
    { 'qwen3_tts.mem_saver': true, language: 'en', steps: 8, temp: 0.7, nested: { k: [1] }, off: null },
    'load_options',
  );
  assert.deepEqual(map, {
    'qwen3_tts.mem_saver': 'true',
    language: 'en',
    steps: '8',
    temp: '0.7',
    nested: '{"k":[1]}',
  });
});

test('toOptionMap keeps a "__proto__" key as an ordinary option', () => {
  const map = toOptionMap(JSON.parse('{"__proto__": 1}'), 'load_options');
  assert.equal(Object.getPrototypeOf(map), Object.prototype);
  assert.equal(Object.hasOwn(map, '__proto__'), true);
  assert.equal(Object.getOwnPropertyDescriptor(map, '__proto__')?.value, '1');
});

test('toOptionMap rejects anything but a plain object, naming the key and value', () => {
  for (const bad of [null, [], 'x', 3, true]) {
    assert.throws(
      () => toOptionMap(bad, 'models[0].load_options'),
      (e: unknown) => e instanceof ConfigError && e.key === 'models[0].load_options',
    );
  }
  try {
    toOptionMap([1], 'models[0].load_options');
    assert.fail('expected a ConfigError');
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    assert.match(err.message, /^models\[0\]\.load_options: \[1\] is invalid; expected /);
  }
});

test('toOptionMap rejects non-finite numbers under the option key', () => {
  try {
    toOptionMap({ x: Number.POSITIVE_INFINITY }, 'session_options');
    assert.fail('expected a ConfigError');
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    assert.equal(err.key, 'session_options.x');
  }
});

test('keyPath quotes names that are not identifiers', () => {
  assert.equal(keyPath('models', 2), 'models[2]');
  assert.equal(keyPath('models[0]', 'id'), 'models[0].id');
  assert.equal(keyPath('models[0].voice_presets', 'my voice'), 'models[0].voice_presets["my voice"]');
  assert.equal(keyPath('', 'host'), 'host');
});

test('ConfigError messages stay on one line', () => {
  const err = ConfigError.invalid('a.b', 'x\ny', 'something\nelse');
  assert.ok(!err.message.includes('\n'));
  assert.equal(err.key, 'a.b');
  assert.equal(err.value, 'x\ny');
  assert.equal(err.name, 'ConfigError');
});
