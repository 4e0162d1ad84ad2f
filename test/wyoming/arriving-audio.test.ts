/**
 * A Wyoming stream's audio converted as it arrives (src/wyoming/arriving-audio.ts): each width and
 * channel count decodes to exactly the mono of its interleaved samples, chunks of any size give
 * exactly what converting the whole stream at once gives, and a large chunk is converted a slice
 * at a time with the event loop turning in between.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { conformAudio, toMono } from '../../src/audio/convert.js';
import { floats } from '../../src/audio/pcm16-audio.js';
import { ArrivingAudio, SLICE_FRAMES } from '../../src/wyoming/arriving-audio.js';
import { decodeMono, type PcmFormat } from '../../src/wyoming/audio-format.js';
import { mulberry32 } from '../helpers/prng.js';

/** The interleaved samples of `payload`, read one by one as the protocol describes them. */
function interleaved(payload: Buffer, { width }: PcmFormat): Float32Array {
  const out = new Float32Array(payload.length / width);
  for (let i = 0; i < out.length; i++) {
    const at = i * width;
    out[i] = width === 1 ? (payload[at]! - 128) / 128 : payload.readIntLE(at, width) / 2 ** (8 * width - 1);
  }
  return out;
}

function noise(bytes: number, seed: number): Buffer {
  const random = mulberry32(seed);
  return Buffer.from(Array.from({ length: bytes }, () => Math.floor(random() * 256)));
}

test('every width (1 unsigned, 2 to 4 signed) and channel count decodes to the exact mono of its samples', () => {
  for (const width of [1, 2, 3, 4])
    for (const channels of [1, 2, 3, 8]) {
      const format = { rate: 16000, width, channels };
      const payload = noise(width * channels * 500, width * 10 + channels);
      const expected = floats(toMono({ samples: interleaved(payload, format), sampleRate: 16000, channels }));
      assert.deepEqual(decodeMono(payload, format), expected, `width ${width}, ${channels} channel(s)`);
    }
});

test('chunks of any size at 44.1 kHz stereo give exactly the whole stream converted to 16 kHz mono at once', async () => {
  const format = { rate: 44100, width: 2, channels: 2 };
  const payload = noise(4 * 44100, 7);
  const whole = conformAudio(
    { samples: interleaved(payload, format), sampleRate: 44100, channels: 2 },
    { sampleRate: 16000, channels: 1 },
  ).samples;
  for (const frames of [1, 441, 4410, 30_000]) {
    const stream = new ArrivingAudio(16000);
    const parts: Float32Array[] = [];
    for (let at = 0; at < payload.length; at += frames * 4)
      parts.push(await stream.push(payload.subarray(at, at + frames * 4), format));
    parts.push(stream.flush());
    const got = Float32Array.from(parts.flatMap((p) => [...p]));
    assert.deepEqual(got, whole, `chunks of ${frames} frames`);
  }
});

test('a chunk larger than a slice is converted with the event loop turning between slices', async () => {
  const format = { rate: 384_000, width: 1, channels: 8 };
  const frames = SLICE_FRAMES * 8;
  let turns = 0;
  const ticking = setInterval(() => turns++, 0);
  try {
    const out = await new ArrivingAudio(16000).push(Buffer.alloc(frames * 8, 128), format);
    assert.equal(out.length > 0, true);
  } finally {
    clearInterval(ticking);
  }
  assert.ok(turns >= 1, `timers ran ${turns} times while the chunk was converted`);
});

test('a stream keeps its first rate: another is invalid_audio; a partial frame is invalid_audio', async () => {
  const stream = new ArrivingAudio(16000);
  await stream.push(Buffer.alloc(320), { rate: 16000, width: 2, channels: 1 });
  await assert.rejects(stream.push(Buffer.alloc(320), { rate: 8000, width: 2, channels: 1 }), {
    code: 'invalid_audio',
    message: /rate 8000 differs from this stream's 16000/,
  });
  await assert.rejects(stream.push(Buffer.alloc(3), { rate: 16000, width: 2, channels: 1 }), {
    code: 'invalid_audio',
    message: /3 bytes are not whole frames/,
  });
});
