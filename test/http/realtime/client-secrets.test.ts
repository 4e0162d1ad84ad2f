/**
 * The store of ephemeral realtime keys on its own, on a manual clock: keys of mixed lives leave in
 * expiry order (not minting order), a key is found while it lives and never after, and the cap
 * counts only live keys.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ClientSecrets, MAX_LIFE_S, MIN_LIFE_S } from '../../../src/http/realtime/client-secrets.js';
import { ManualClock } from '../../helpers/manual-clock.js';
import { mulberry32 } from '../../helpers/prng.js';

test('keys of mixed lives: each is found until its expiry and not after; the count follows', () => {
  const clock = new ManualClock();
  const secrets = new ClientSecrets(clock, 500);
  const random = mulberry32(39);
  const keys = Array.from({ length: 400 }, (_, i) => {
    const life = MIN_LIFE_S + Math.floor(random() * (MAX_LIFE_S - MIN_LIFE_S + 1));
    return { value: secrets.mint({ model: `m${i}` }, life), life, model: `m${i}` };
  });
  assert.equal(new Set(keys.map((k) => k.value)).size, keys.length, 'every key differs');
  for (let elapsed = 0; elapsed <= MAX_LIFE_S; elapsed += 97) {
    clock.advance(elapsed === 0 ? 0 : 97_000);
    const live = keys.filter((k) => k.life > elapsed);
    assert.equal(secrets.size, live.length, `at ${elapsed} s`);
    for (const k of keys) assert.equal(secrets.find(k.value)?.model, k.life > elapsed ? k.model : undefined);
  }
  clock.advance(MAX_LIFE_S * 1000);
  assert.equal(secrets.size, 0);
});

test('the cap counts live keys only; a refusal says when the soonest expires', () => {
  const clock = new ManualClock();
  const secrets = new ClientSecrets(clock, 2);
  secrets.mint({ model: undefined }, 100);
  secrets.mint({ model: undefined }, 20);
  clock.advance(5_000);
  assert.throws(
    () => secrets.mint({ model: undefined }, 600),
    (err: { code: string; retryAfterS: number }) =>
      err.code === 'E_TOO_MANY_CLIENT_SECRETS' && err.retryAfterS === 15,
  );
  clock.advance(15_000);
  assert.match(secrets.mint({ model: undefined }, 600), /^ek_/);
  assert.equal(secrets.size, 2);
  assert.equal(secrets.find('ek_not-a-key'), undefined);
  assert.equal(secrets.find('sk-anything'), undefined);
});
