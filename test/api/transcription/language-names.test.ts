/** Whisper's language names, as OpenAI's verbose_json gives them, from the codes engines report. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { languageName } from '../../../src/api/transcription/language-names.js';

test("codes, BCP 47 tags and names become Whisper's lowercase name; other codes stay as given", () => {
  assert.equal(languageName('en'), 'english');
  assert.equal(languageName('EN'), 'english');
  assert.equal(languageName('en-US'), 'english');
  assert.equal(languageName('zh_Hans'), 'chinese');
  assert.equal(languageName('yue'), 'cantonese');
  assert.equal(languageName('haw'), 'hawaiian');
  assert.equal(languageName('ht'), 'haitian creole');
  assert.equal(languageName('English'), 'english');
  assert.equal(languageName('xx'), 'xx');
  assert.equal(languageName('auto'), 'auto');
  // Own keys only: a prototype's name is no language.
  assert.equal(languageName('constructor'), 'constructor');
});
