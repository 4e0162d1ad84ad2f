import assert from 'node:assert/strict';
import { test } from 'node:test';
import { conformAudio, conformPieces, resample, StreamResampler } from '../../src/audio/convert.js';
import { floats } from '../../src/audio/pcm16-audio.js';
import type { Audio } from '../../src/audio/types.js';

/** A deterministic test signal: two tones and a little noise. */
function signal(frames: number): Float32Array {
  let seed = 7;
  return Float32Array.from({ length: frames }, (_, i) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return 0.4 * Math.sin(i / 9) + 0.2 * Math.sin(i / 2.3) + 0.05 * (seed / 2 ** 31 - 0.5);
  });
}

test('StreamResampler gives exactly what resample gives for the whole input, however it is cut', () => {
  for (const [from, to] of [
    [44100, 16000],
    [48000, 16000],
    [8000, 16000],
    [22050, 16000],
    [44101, 16000],
  ] as const) {
    const input = signal(from); // one second
    const whole = floats(resample({ samples: input, sampleRate: from, channels: 1 }, to));
    for (const piece of [1, 37, 512, 4410, from]) {
      const stream = new StreamResampler(from, to);
      const parts: Float32Array[] = [];
      for (let at = 0; at < input.length; at += piece)
        parts.push(stream.push(input.subarray(at, at + piece)));
      parts.push(stream.flush());
      const streamed = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
      let at = 0;
      for (const part of parts) {
        streamed.set(part, at);
        at += part.length;
      }
      assert.equal(streamed.length, whole.length, `${from} -> ${to} in pieces of ${piece}`);
      assert.deepEqual(streamed, whole, `${from} -> ${to} in pieces of ${piece}`);
    }
  }
});

test('StreamResampler sends output while input still arrives', () => {
  const stream = new StreamResampler(48000, 16000);
  const first = stream.push(signal(4800)); // 100 ms
  assert.ok(first.length > 1000, `${first.length} frames out of 100 ms in`);
  assert.equal(stream.flush().length + first.length, 1600);
  assert.equal(new StreamResampler(48000, 16000).flush().length, 0);
});

test('conformPieces: live stereo 44.1 kHz pieces become exactly the whole input converted to 16 kHz mono', async () => {
  const left = signal(44100);
  const samples = new Float32Array(2 * left.length);
  for (let i = 0; i < left.length; i++) {
    samples[2 * i] = left[i]!;
    samples[2 * i + 1] = -0.5 * left[i]!;
  }
  const whole = conformAudio({ samples, sampleRate: 44100, channels: 2 }, { sampleRate: 16000, channels: 1 });
  async function* pieces(): AsyncIterable<Audio> {
    for (let at = 0; at < samples.length; at += 2 * 1234)
      yield { samples: samples.subarray(at, at + 2 * 1234), sampleRate: 44100, channels: 2 };
  }
  const out: number[] = [];
  for await (const piece of conformPieces(pieces(), { sampleRate: 16000, channels: 1 })) {
    assert.deepEqual([piece.sampleRate, piece.channels], [16000, 1]);
    out.push(...floats(piece));
  }
  assert.deepEqual(Float32Array.from(out), floats(whole));
});
