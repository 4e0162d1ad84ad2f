import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { subtitleTime, toSrt, toVtt } from '../../../src/api/transcription/subtitles.js';

describe('subtitles', () => {
  test('timestamps: zero, the last millisecond of a minute, past an hour, rounding that carries', () => {
    assert.equal(subtitleTime(0, ','), '00:00:00,000');
    assert.equal(subtitleTime(59.999, ','), '00:00:59,999');
    assert.equal(subtitleTime(59.999, '.'), '00:00:59.999');
    assert.equal(subtitleTime(59.9996, ','), '00:01:00,000');
    assert.equal(subtitleTime(3600 + 62.5, '.'), '01:01:02.500');
    assert.equal(subtitleTime(100 * 3600 + 0.001, ','), '100:00:00,001');
    assert.equal(subtitleTime(-1, ','), '00:00:00,000');
  });

  test('cues without words are left out and the numbering stays gapless; blank lines in text close up', () => {
    const cues = [
      { start: 0, end: 1.5, text: ' one ' },
      { start: 1.5, end: 2, text: '  ' },
      { start: 2, end: 3.25, text: 'two\n\nlines' },
    ];
    assert.equal(
      toSrt(cues),
      '1\n00:00:00,000 --> 00:00:01,500\none\n\n2\n00:00:02,000 --> 00:00:03,250\ntwo\nlines\n\n',
    );
    assert.equal(
      toVtt(cues),
      'WEBVTT\n\n00:00:00.000 --> 00:00:01.500\none\n\n00:00:02.000 --> 00:00:03.250\ntwo\nlines\n\n',
    );
    assert.equal(toVtt([]), 'WEBVTT\n\n');
    assert.equal(toSrt([]), '');
  });
});
