import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  audioPool,
  conformAudioAsync,
  decodeWavAsync,
  INLINE_LIMIT,
  PCM16_INLINE_LIMIT,
  RESAMPLE_INLINE_LIMIT,
} from '../../src/audio/audio-pool.js';
import { conformAudio } from '../../src/audio/convert.js';
import { floats } from '../../src/audio/pcm16-audio.js';
import type { Audio } from '../../src/audio/types.js';
import { decodeWav, WavError } from '../../src/audio/wav-decode.js';
import { encodeWav } from '../../src/audio/wav-encode.js';

function tone(seconds: number, sampleRate: number, channels: number): Audio {
  const frames = Math.round(seconds * sampleRate);
  const samples = new Float32Array(frames * channels);
  for (let i = 0; i < frames; i++) {
    for (let c = 0; c < channels; c++)
      samples[i * channels + c] = 0.3 * Math.sin((2 * Math.PI * 440 * i) / sampleRate + c);
  }
  return { samples, sampleRate, channels };
}

/** Counts event-loop turns until `promise` settles: 0 means the work blocked the loop. */
async function turnsWhile<T>(promise: Promise<T>): Promise<{ value: T; turns: number }> {
  let turns = 0;
  let done = false;
  const tick = () => {
    if (done) return;
    turns++;
    setImmediate(tick);
  };
  setImmediate(tick);
  const value = await promise;
  done = true;
  return { value, turns };
}

/** A 32-bit float WAV of `audio`: an encoding that is decoded sample by sample, not copied. */
function floatWav(audio: Audio): Buffer {
  const data = Buffer.from(floats(audio).buffer, floats(audio).byteOffset, floats(audio).byteLength);
  const head = Buffer.alloc(44);
  head.write('RIFF', 0);
  head.writeUInt32LE(36 + data.length, 4);
  head.write('WAVEfmt ', 8);
  head.writeUInt32LE(16, 16);
  head.writeUInt16LE(3, 20);
  head.writeUInt16LE(audio.channels, 22);
  head.writeUInt32LE(audio.sampleRate, 24);
  head.writeUInt32LE(audio.sampleRate * audio.channels * 4, 28);
  head.writeUInt16LE(audio.channels * 4, 32);
  head.writeUInt16LE(32, 34);
  head.write('data', 36);
  head.writeUInt32LE(data.length, 40);
  return Buffer.concat([head, data]);
}

test('long WAVs decode on a worker thread, with the same result and the event loop free; 16-bit PCM up to PCM16_INLINE_LIMIT is one copy, inline', async () => {
  const bytes = floatWav(tone(30, 44100, 2));
  assert.ok(bytes.length > INLINE_LIMIT);
  let before = audioPool.offloaded;
  const { value, turns } = await turnsWhile(decodeWavAsync(bytes));
  assert.equal(audioPool.offloaded, before + 1);
  assert.ok(turns > 0, 'the event loop kept turning while the worker decoded');
  const inline = decodeWav(bytes);
  assert.equal(value.sampleRate, 44100);
  assert.equal(value.channels, 2);
  assert.deepEqual(floats(value), floats(inline));

  const pcm16 = encodeWav(tone(30, 44100, 2));
  assert.ok(pcm16.length > INLINE_LIMIT && pcm16.length < PCM16_INLINE_LIMIT);
  before = audioPool.offloaded;
  const copied = await decodeWavAsync(pcm16);
  assert.equal(audioPool.offloaded, before, 'no thread hop for a copy');
  assert.ok(copied.pcm16);
  assert.deepEqual(floats(copied), floats(decodeWav(pcm16)));
});

test('long audio is converted on a worker thread with the same result as inline', async () => {
  const audio = tone(30, 48000, 2);
  assert.ok(floats(audio).length > INLINE_LIMIT);
  const before = audioPool.offloaded;
  const need = { sampleRate: 16000, channels: 1 };
  const { value, turns } = await turnsWhile(conformAudioAsync(audio, need));
  assert.equal(audioPool.offloaded, before + 1);
  assert.ok(turns > 0);
  assert.deepEqual(value, conformAudio(audio, need));
  assert.equal(floats(audio).length, 30 * 48000 * 2, 'the input stays usable (it was copied, not moved)');
});

test('resampling leaves the event loop above a few milliseconds of work: a realtime turn (5 s at 24 kHz) goes to a worker; mixing alone stays inline', async () => {
  const turn = tone(5, 24000, 1);
  assert.ok(floats(turn).length < INLINE_LIMIT && floats(turn).length > RESAMPLE_INLINE_LIMIT);
  const need = { sampleRate: 16000, channels: 1 };
  let before = audioPool.offloaded;
  const { value, turns } = await turnsWhile(conformAudioAsync(turn, need));
  assert.equal(audioPool.offloaded, before + 1);
  assert.ok(turns > 0, 'the event loop kept turning while the worker resampled');
  assert.deepEqual(value, conformAudio(turn, need));
  // A quarter second (a live piece) is cheaper to resample here than to send away.
  before = audioPool.offloaded;
  await conformAudioAsync(tone(0.1, 24000, 1), need);
  assert.equal(audioPool.offloaded, before, 'no thread hop for 0.1 s');
  // Mixing 5 s of stereo at the model's rate is cheap: inline.
  await conformAudioAsync(tone(5, 16000, 2), need);
  assert.equal(audioPool.offloaded, before, 'no thread hop for mixing alone');
});

test('short inputs are handled inline; bad long input is a WavError', async () => {
  const before = audioPool.offloaded;
  const small = await decodeWavAsync(encodeWav(tone(0.1, 16000, 1)));
  assert.equal(small.sampleRate, 16000);
  assert.equal(audioPool.offloaded, before, 'no thread hop for a small file');
  const garbage = Buffer.alloc(INLINE_LIMIT + 10, 7);
  await assert.rejects(
    decodeWavAsync(garbage),
    (err: unknown) => err instanceof WavError && /not a WAV file/.test(err.message),
  );
  const parallel = await Promise.all([1, 2, 3].map(() => decodeWavAsync(encodeWav(tone(10, 44100, 2)))));
  for (const audio of parallel) assert.equal(floats(audio).length, 10 * 44100 * 2);
});
