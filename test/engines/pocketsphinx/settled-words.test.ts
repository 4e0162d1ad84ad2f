import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SettledWords } from '../../../src/engines/pocketsphinx/pocketsphinx-family.js';

test('SettledWords: sends the words three guesses agree on, never takes one back, ends with the final text', () => {
  const sent: string[] = [];
  const words = new SettledWords((delta) => sent.push(delta));
  words.guess("we're");
  words.guess('please');
  words.guess('please bring');
  assert.deepEqual(sent, [], 'no three guesses agree yet');
  words.guess('please bring the');
  assert.deepEqual(sent, ['please']);
  words.guess('please bring the blue');
  assert.deepEqual(sent, ['please', ' bring']);
  words.guess('please ring the blue');
  words.guess('please ring the blue umbrella');
  words.guess('please ring the blue umbrella');
  assert.deepEqual(sent, ['please', ' bring'], 'a revision of sent words is not sent');
  words.final('please bring the blue umbrella today');
  assert.deepEqual(sent, ['please', ' bring', ' the blue umbrella today']);
  assert.equal(sent.join(''), 'please bring the blue umbrella today');
  const other: string[] = [];
  const revised = new SettledWords((delta) => other.push(delta));
  for (const g of ['a b', 'a b', 'a b']) revised.guess(g);
  revised.final('a c');
  assert.deepEqual(other, ['a b'], 'a final text that revises sent words adds nothing');
});
