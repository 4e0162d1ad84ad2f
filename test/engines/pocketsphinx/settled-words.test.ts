import assert from 'node:assert/strict';
import { test } from 'node:test';
import { alignSettled, SettledWords } from '../../../src/engines/pocketsphinx/settled-words.js';

test('SettledWords: sends the words three guesses agree on, never takes one back, ends with the final text', async () => {
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
  assert.equal(
    (await words.final('please bring the blue umbrella today')).text,
    'please bring the blue umbrella today',
  );
  assert.deepEqual(sent, ['please', ' bring', ' the blue umbrella today']);
});

test('SettledWords: a final search that revises sent words keeps them and adds only what it heard after them', async () => {
  // The realtime client run of 2026-12: deltas "then love", " the"; the final search said "then lock the front yard".
  const sent: string[] = [];
  const words = new SettledWords((delta) => sent.push(delta));
  for (const g of ['then love', 'then love', 'then love the', 'then love the', 'then love the'])
    words.guess(g);
  assert.deepEqual(sent, ['then love', ' the']);
  const timed = ['then', 'lock', 'the', 'front', 'yard'].map((word, i) => ({
    word,
    start_sample: i * 1000,
    end_sample: i * 1000 + 800,
    confidence: 0.5,
  }));
  const { text, words: final } = await words.final('then lock the front yard', timed);
  assert.equal(text, 'then love the front yard');
  assert.deepEqual(
    final.map((w) => [w.word, w.start_sample]),
    [
      ['then', 0],
      ['love', 1000],
      ['the', 2000],
      ['front', 3000],
      ['yard', 4000],
    ],
    'each word keeps the times of the final word it stands for',
  );
  assert.equal(sent.join(''), text, 'the deltas join into the final text');
  // Wyoming's ['throw', ' living room'] against "total living room layout".
  const chunks: string[] = [];
  const other = new SettledWords((delta) => chunks.push(delta));
  for (const g of ['throw', 'throw', 'throw', 'throw living room', 'throw living room', 'throw living room'])
    other.guess(g);
  assert.equal((await other.final('total living room layout')).text, 'throw living room layout');
  assert.equal(chunks.join(''), 'throw living room layout');
});

test('alignSettled: which final word each settled word stands for, and where the rest begins', () => {
  const w = (text: string) => text.split(' ').filter(Boolean);
  assert.deepEqual(alignSettled(w('a x c'), w('a y c d')), { pairs: [0, 1, 2], rest: 3 });
  assert.deepEqual(alignSettled(w('a b c'), w('a c d')), { pairs: [0, -1, 1], rest: 2 });
  assert.deepEqual(alignSettled(w('a c'), w('a b c d')), { pairs: [0, 2], rest: 3 });
  const many = Array.from({ length: 100 }, (_, i) => `w${i}`);
  assert.deepEqual(alignSettled(many, w('w0 w1')).rest, 2, 'far fewer final words than settled ones');
});

const afterSettled = (settled: string[], final: string[]) => final.slice(alignSettled(settled, final).rest);

test('alignSettled: the rest of the final text after the prefix the settled words match best', () => {
  const w = (text: string) => text.split(' ').filter(Boolean);
  assert.deepEqual(afterSettled([], w('a b c')), w('a b c'));
  assert.deepEqual(afterSettled(w('a b'), w('a b c d')), w('c d'));
  assert.deepEqual(afterSettled(w('a x'), w('a y c')), w('c'), 'a substituted word');
  assert.deepEqual(afterSettled(w('a b c'), w('a c d')), w('d'), 'a word the final search dropped');
  assert.deepEqual(afterSettled(w('a c'), w('a b c d')), w('d'), 'a word the final search inserted');
  assert.deepEqual(afterSettled(w('a b c d'), w('a b')), [], 'a final search that heard less adds nothing');
  assert.deepEqual(afterSettled(w('he was not'), w('he was not not until')), w('not until'));
  // Long texts align within a band: 20,000 settled words against 20,010 final ones, one word changed.
  const long = Array.from({ length: 20_000 }, (_, i) => `w${i % 97}`);
  const final = [
    ...long.slice(0, 100),
    'changed',
    ...long.slice(101),
    ...w('and ten more words than were settled so far'),
  ];
  assert.deepEqual(afterSettled(long, final), w('and ten more words than were settled so far'));
});
