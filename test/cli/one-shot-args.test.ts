/** The one-shot commands' argument parser and speak's output format, without running anything. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseOneShotArgs, speakFormat, UsageError } from '../../src/cli/one-shot-args.js';

describe('parseOneShotArgs', () => {
  test('short and long flags, --flag=value, and the text or file', () => {
    const args = parseOneShotArgs('speak', [
      'hi there',
      '-m',
      'flite',
      '--voice=slt',
      '-o',
      '-',
      '--speed',
      '1.5',
    ]);
    assert.equal(args.input, 'hi there');
    assert.equal(args.model, 'flite');
    assert.equal(args.voice, 'slt');
    assert.equal(args.output, '-', '"-" is a value after -o');
    assert.equal(args.speed, 1.5);
    const t = parseOneShotArgs('transcribe', ['-', '--language', 'de', '--format=srt', '--log']);
    assert.deepEqual([t.input, t.language, t.format, t.log], ['-', 'de', 'srt', true]);
  });

  test('after -- every word is an argument, a dashed text included', () => {
    assert.equal(parseOneShotArgs('speak', ['-m', 'flite', '--', '-5 degrees']).input, '-5 degrees');
  });

  test('--url is normalised; --api-key is kept', () => {
    const args = parseOneShotArgs('vad', ['a.wav', '--url', 'http://127.0.0.1:8080/', '--api-key', 'k']);
    assert.equal(args.url, 'http://127.0.0.1:8080');
    assert.equal(args.apiKey, 'k');
  });

  test('--help wins over any other problem', () => {
    assert.equal(parseOneShotArgs('transcribe', ['--bogus', '--help']).help, true);
    assert.equal(parseOneShotArgs('vad', ['-h']).help, true);
  });

  test('bad usage throws UsageError', () => {
    const bad: [Parameters<typeof parseOneShotArgs>[0], string[]][] = [
      ['transcribe', []],
      ['transcribe', ['a.wav', '--bogus']],
      ['transcribe', ['a.wav', '-m']],
      ['transcribe', ['a.wav', '-m', '--format', 'text']],
      ['transcribe', ['a.wav', 'b.wav']],
      ['transcribe', ['a.wav', '--format', 'diarized_json']],
      ['diarize', ['a.wav', '--format', 'srt']],
      ['vad', ['a.wav', '--language', 'en']],
      ['speak', ['hi', '--speed', '0']],
      ['speak', ['hi', '--speed', '-1']],
      ['speak', ['hi', '--url', 'ftp://x']],
      ['speak', ['hi', '--url', 'http://x', '--config', 'c.json']],
    ];
    for (const [command, argv] of bad)
      assert.throws(() => parseOneShotArgs(command, argv), UsageError, `${command} ${argv.join(' ')}`);
  });
});

describe('speakFormat', () => {
  test('--format, else the extension, else wav', () => {
    assert.equal(speakFormat({ output: 'a.MP3' }), 'mp3');
    assert.equal(speakFormat({ output: 'dir.v2/a.flac' }), 'flac');
    assert.equal(speakFormat({ output: 'a.ogg' }), 'opus');
    assert.equal(speakFormat({ output: 'dir.v2/noext' }), 'wav');
    assert.equal(speakFormat({ output: '.hidden' }), 'wav');
    assert.equal(speakFormat({ output: '-' }), 'wav');
    assert.equal(speakFormat({}), 'wav');
    assert.equal(speakFormat({ output: 'a.wav', format: 'pcm' }), 'pcm');
  });

  test('an extension that names no format is a usage error', () => {
    assert.throws(() => speakFormat({ output: 'a.mp4' }), UsageError);
  });
});
