/** ffmpeg's streamed output read as it comes: pieces cut anywhere, the downmix, the budgets; its messages. */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { toMono } from '../../src/audio/convert.js';
import { DecodedAudio } from '../../src/audio/decoded-audio.js';
import { lastLine, refusedFormat } from '../../src/audio/ffmpeg-input.js';
import { floats } from '../../src/audio/pcm16-audio.js';

/** The header ffmpeg writes to a pipe for float samples (extensible fmt, a LIST, data of unknown size). */
function ffmpegWav(rate: number, channels: number, samples: Float32Array): Buffer {
  const fmt = Buffer.alloc(48);
  fmt.write('fmt ', 0, 'latin1');
  fmt.writeUInt32LE(40, 4);
  fmt.writeUInt16LE(0xfffe, 8);
  fmt.writeUInt16LE(channels, 10);
  fmt.writeUInt32LE(rate, 12);
  fmt.writeUInt16LE(32, 22);
  const list = Buffer.concat([Buffer.from('LIST', 'latin1'), Buffer.from([4, 0, 0, 0]), Buffer.from('INFO')]);
  const data = Buffer.concat([Buffer.from('data', 'latin1'), Buffer.from([0xff, 0xff, 0xff, 0xff])]);
  const riff = Buffer.concat([
    Buffer.from('RIFF', 'latin1'),
    Buffer.from([0xff, 0xff, 0xff, 0xff]),
    Buffer.from('WAVE'),
  ]);
  return Buffer.concat([
    riff,
    fmt,
    list,
    data,
    Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength),
  ]);
}

function stereo(frames: number): Float32Array {
  const s = new Float32Array(frames * 2);
  for (let i = 0; i < s.length; i++) s[i] = Math.sin(i * 0.37) * 0.8;
  return s;
}

test('pieces cut at every odd place give the samples toMono gives for the whole', () => {
  const samples = stereo(5000);
  const bytes = ffmpegWav(22050, 2, samples);
  const want = floats(toMono({ samples, sampleRate: 22050, channels: 2 }));
  for (const step of [1, 3, 7, 100, 4093, bytes.length]) {
    const audio = new DecodedAudio(0, 1 << 30);
    for (let at = 0; at < bytes.length; at += step) assert.ok(audio.push(bytes.subarray(at, at + step)));
    const got = audio.take();
    assert.equal(got.sampleRate, 22050);
    assert.equal(got.channels, 1);
    assert.deepEqual(floats(got), want, `pieces of ${step} bytes`);
  }
});

test('the budgets: seconds and bytes stop it at the piece that passes them', () => {
  const bytes = ffmpegWav(8000, 2, stereo(8000 * 3));
  const seconds = new DecodedAudio(2, 1 << 30);
  let accepted = true;
  for (let at = 0; at < bytes.length && accepted; at += 4096)
    accepted = seconds.push(bytes.subarray(at, at + 4096));
  assert.equal(accepted, false);
  assert.equal(seconds.overrun, 'seconds');
  assert.ok(seconds.frames <= 16_000);
  const small = new DecodedAudio(0, 4 * 10_000);
  for (let at = 0; at < bytes.length; at += 4096) small.push(bytes.subarray(at, at + 4096));
  assert.equal(small.overrun, 'bytes');
  assert.ok(small.frames <= 10_000);
  assert.equal(small.push(Buffer.alloc(8)), false, 'nothing more is taken');
});

test('output that is not the float WAV asked for is an error, not samples', () => {
  assert.throws(() => new DecodedAudio(0, 1e9).push(Buffer.from('OggS not a wav at all')), /no audio header/);
  const pcm16 = ffmpegWav(8000, 1, new Float32Array(4));
  pcm16.writeUInt16LE(16, 12 + 22);
  assert.throws(() => new DecodedAudio(0, 1e9).push(pcm16), /unexpected audio format/);
});

test("ffmpeg's lines lose their context addresses and the input's name", () => {
  assert.equal(
    lastLine("x\n[concat @ 0x558a1c2d3e40] Impossible to open '/dev/stdin'\n"),
    "concat: Impossible to open '/dev/stdin'",
  );
  assert.equal(
    lastLine('/dev/stdin: Invalid data found when processing input'),
    'Invalid data found when processing input',
  );
  assert.equal(lastLine('at 0x7ffd1234abcd something'), 'at 0x... something');
  assert.equal(
    refusedFormat("[hls @ 0x55d148136a40] Format not on whitelist 'wav,mp3'\n/dev/stdin: Invalid argument"),
    'hls',
  );
  assert.equal(refusedFormat('/dev/stdin: Invalid data found when processing input'), undefined);
});
