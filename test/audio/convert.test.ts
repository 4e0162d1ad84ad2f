import assert from 'node:assert/strict';
import { test } from 'node:test';
import { conformAudio, duplicateMono, resample, toMono } from '../../src/audio/convert.js';
import { floats } from '../../src/audio/pcm16-audio.js';
import type { Audio } from '../../src/audio/types.js';

function tone(freq: number, rate: number, seconds: number, amp = 0.5): Audio {
  const n = Math.round(rate * seconds);
  const samples = new Float32Array(n);
  for (let i = 0; i < n; i++) samples[i] = amp * Math.sin((2 * Math.PI * freq * i) / rate);
  return { samples, sampleRate: rate, channels: 1 };
}

/** Channel `c` of interleaved audio. */
function channel(audio: Audio, c: number): Float32Array {
  return floats(audio).filter((_, i) => i % audio.channels === c);
}

/** RMS over the middle of a signal, skipping `edge` samples at each end where zero padding tapers it. */
function rms(s: Float32Array, edge = 0): number {
  let sum = 0;
  for (let i = edge; i < s.length - edge; i++) sum += s[i]! * s[i]!;
  return Math.sqrt(sum / (s.length - 2 * edge));
}

/** Amplitude of the `freq` component (projection onto sin and cos), over the middle of the signal. */
function amplitudeAt(s: Float32Array, rate: number, freq: number, edge: number): number {
  let re = 0;
  let im = 0;
  for (let i = edge; i < s.length - edge; i++) {
    const w = (2 * Math.PI * freq * i) / rate;
    re += s[i]! * Math.cos(w);
    im += s[i]! * Math.sin(w);
  }
  return (2 * Math.hypot(re, im)) / (s.length - 2 * edge);
}

/** Frequency from rising zero crossings, interpolated to sub-sample position, between the first and last. */
function measureFrequency(s: Float32Array, rate: number, edge: number): number {
  const crossings: number[] = [];
  for (let i = edge; i < s.length - edge - 1; i++) {
    const a = s[i]!;
    const b = s[i + 1]!;
    if (a < 0 && b >= 0) crossings.push(i + a / (a - b));
  }
  assert.ok(crossings.length >= 2, 'no zero crossings');
  return ((crossings.length - 1) * rate) / (crossings.at(-1)! - crossings[0]!);
}

test('toMono averages channels; mono passes through', () => {
  const stereo: Audio = {
    samples: new Float32Array([1, 0, 0.5, -0.5, -1, 0.5]),
    sampleRate: 8000,
    channels: 2,
  };
  const mono = toMono(stereo);
  assert.equal(mono.channels, 1);
  assert.equal(mono.sampleRate, 8000);
  assert.deepEqual(Array.from(floats(mono)), [0.5, 0, -0.25]);

  const three: Audio = { samples: new Float32Array([0.3, 0.6, 0.9]), sampleRate: 8000, channels: 3 };
  assert.ok(Math.abs(floats(toMono(three))[0]! - 0.6) < 1e-6);

  const already = tone(440, 8000, 0.01);
  assert.equal(toMono(already), already);
});

test('duplicateMono copies the signal into every channel', () => {
  const out = duplicateMono({ samples: new Float32Array([0.1, -0.2]), sampleRate: 8000, channels: 1 }, 3);
  assert.equal(out.channels, 3);
  assert.deepEqual(Array.from(floats(out)), Array.from(new Float32Array([0.1, 0.1, 0.1, -0.2, -0.2, -0.2])));
});

test('resample output length is round(frames * dst / src)', () => {
  const pairs: Array<[number, number]> = [
    [8000, 16000],
    [44100, 16000],
    [48000, 22050],
    [16000, 44100],
    [22050, 16000],
    [44101, 16000], // coprime rates take the interpolated-table path
    [16000, 8000],
  ];
  for (const [src, dst] of pairs) {
    for (const frames of [0, 1, 2, 3, 7, 100, 1001, 44100]) {
      const audio: Audio = { samples: new Float32Array(frames * 2), sampleRate: src, channels: 2 };
      const out = resample(audio, dst);
      const expected = Math.round((frames * dst) / src);
      assert.equal(floats(out).length, expected * 2, `${src} -> ${dst}, ${frames} frames`);
      assert.equal(out.sampleRate, dst);
      assert.equal(out.channels, 2);
    }
  }
});

test('resample at equal rates is the identity', () => {
  const audio = tone(440, 16000, 0.1);
  assert.equal(resample(audio, 16000), audio);
});

test('resample rejects invalid rates', () => {
  const audio = tone(440, 16000, 0.01);
  assert.throws(() => resample(audio, 0), RangeError);
  assert.throws(() => resample(audio, 22050.5), RangeError);
  assert.throws(() => resample({ ...audio, sampleRate: -1 }, 16000), RangeError);
});

test('440 Hz at 44100 -> 16000 keeps its frequency and amplitude', () => {
  const out = resample(tone(440, 44100, 1), 16000);
  const freq = measureFrequency(floats(out), 16000, 200);
  assert.ok(Math.abs(freq - 440) < 0.5, `measured ${freq} Hz`);
  assert.ok(Math.abs(rms(floats(out), 200) - 0.5 / Math.SQRT2) < 0.005, `rms ${rms(floats(out), 200)}`);
});

test('tones above the new Nyquist frequency are removed when downsampling (no aliasing)', () => {
  // At 16 kHz output, Nyquist is 8 kHz: 10 kHz and 12 kHz would alias to 6 kHz and 4 kHz.
  for (const freq of [8500, 10000, 12000, 15000]) {
    const input = tone(freq, 44100, 0.5);
    const out = resample(input, 16000);
    const ratio = rms(floats(out), 200) / rms(floats(input));
    assert.ok(ratio < 0.05, `${freq} Hz kept ${ratio} of its RMS`);
    assert.ok(ratio < 1e-3, `${freq} Hz kept ${ratio} of its RMS (expected about -95 dB)`);
  }
  // A 7 kHz tone cannot survive a 8 kHz output (Nyquist 4 kHz).
  const input = tone(7000, 44100, 0.5);
  assert.ok(rms(floats(resample(input, 8000)), 100) / rms(floats(input)) < 1e-3);
});

test('tones well inside the passband keep their level', () => {
  for (const [src, dst, freq] of [
    [44100, 16000, 6000],
    [48000, 22050, 9000],
    [8000, 16000, 3000],
    [16000, 44100, 6000],
  ] as const) {
    const input = tone(freq, src, 0.5);
    const out = resample(input, dst);
    const ratio = rms(floats(out), 200) / rms(floats(input));
    assert.ok(Math.abs(ratio - 1) < 0.01, `${src} -> ${dst}: ${freq} Hz kept ${ratio} of its RMS`);
    assert.ok(Math.abs(measureFrequency(floats(out), dst, 200) - freq) < 1, `${src} -> ${dst}: ${freq} Hz`);
  }
});

test('upsampling 8000 -> 16000 leaves no image above the old Nyquist frequency', () => {
  const out = resample(tone(1000, 8000, 0.5), 16000);
  assert.ok(Math.abs(amplitudeAt(floats(out), 16000, 1000, 200) - 0.5) < 0.005);
  // Zero-stuffing without filtering would put a 7 kHz image (8000 - 1000) of equal amplitude here.
  assert.ok(amplitudeAt(floats(out), 16000, 7000, 200) < 1e-4);
});

test('coprime rates (interpolated filter table) resample accurately too', () => {
  const out = resample(tone(440, 44101, 1), 16000);
  assert.ok(Math.abs(measureFrequency(floats(out), 16000, 200) - 440) < 0.5);
  assert.ok(Math.abs(amplitudeAt(floats(out), 16000, 440, 200) - 0.5) < 0.002);
});

test('DC passes at unit gain away from the edges', () => {
  const audio: Audio = { samples: new Float32Array(4410).fill(0.5), sampleRate: 44100, channels: 1 };
  const out = resample(audio, 16000);
  for (let i = 200; i < floats(out).length - 200; i++) {
    assert.ok(Math.abs(floats(out)[i]! - 0.5) < 1e-4, `sample ${i}: ${floats(out)[i]}`);
  }
});

test('channels are resampled independently', () => {
  const left = tone(300, 48000, 0.5);
  const right = tone(1200, 48000, 0.5, 0.25);
  const samples = new Float32Array(floats(left).length * 2);
  floats(left).forEach((v, i) => {
    samples[2 * i] = v;
    samples[2 * i + 1] = floats(right)[i]!;
  });
  const out = resample({ samples, sampleRate: 48000, channels: 2 }, 16000);
  const l = channel(out, 0);
  const r = channel(out, 1);
  assert.ok(Math.abs(amplitudeAt(l, 16000, 300, 200) - 0.5) < 0.005);
  assert.ok(amplitudeAt(l, 16000, 1200, 200) < 1e-3);
  assert.ok(Math.abs(amplitudeAt(r, 16000, 1200, 200) - 0.25) < 0.005);
  assert.ok(amplitudeAt(r, 16000, 300, 200) < 1e-3);
});

test('conformAudio: stereo 48 kHz -> mono 16 kHz', () => {
  const left = tone(500, 48000, 0.5, 0.4);
  const samples = new Float32Array(floats(left).length * 2);
  floats(left).forEach((v, i) => {
    samples[2 * i] = v;
    samples[2 * i + 1] = v * 0.5; // mono mix is 0.75 * left
  });
  const out = conformAudio({ samples, sampleRate: 48000, channels: 2 }, { sampleRate: 16000, channels: 1 });
  assert.equal(out.channels, 1);
  assert.equal(out.sampleRate, 16000);
  assert.equal(floats(out).length, 8000);
  assert.ok(Math.abs(amplitudeAt(floats(out), 16000, 500, 200) - 0.3) < 0.003);
});

test('conformAudio keeps matching channels, duplicates mono, and passes through what already fits', () => {
  const stereo: Audio = { samples: new Float32Array(32000), sampleRate: 16000, channels: 2 };
  assert.equal(conformAudio(stereo, { sampleRate: 16000, channels: 2 }), stereo);
  const resampled = conformAudio(stereo, { sampleRate: 8000, channels: 2 });
  assert.equal(resampled.channels, 2);
  assert.equal(floats(resampled).length, 16000);

  const mono = tone(440, 24000, 0.25);
  const up = conformAudio(mono, { sampleRate: 16000, channels: 2 });
  assert.equal(up.channels, 2);
  assert.equal(up.sampleRate, 16000);
  assert.deepEqual(channel(up, 0), channel(up, 1));
  assert.ok(Math.abs(amplitudeAt(channel(up, 0), 16000, 440, 200) - 0.5) < 0.005);

  const quad: Audio = { samples: new Float32Array([0.4, 0.4, 0.4, 0.4]), sampleRate: 16000, channels: 4 };
  const two = conformAudio(quad, { sampleRate: 16000, channels: 2 });
  assert.equal(two.channels, 2);
  assert.deepEqual(Array.from(floats(two)), Array.from(new Float32Array([0.4, 0.4])));
});

// How fast: `node scripts/bench-audio.mjs` (docs/performance.md); a test asserts what comes out.
test('a minute of 44.1 kHz audio resamples to 16 kHz whole, the tone kept to its end', () => {
  const audio = tone(440, 44100, 60);
  const out = resample(audio, 16000);
  assert.equal(out.sampleRate, 16000);
  assert.ok(Math.abs(floats(out).length - 16000 * 60) <= 1, `${floats(out).length} samples`);
  // Each second alone (200 samples from each edge skipped) still holds the 440 Hz tone at 0.5.
  for (const second of [0, 30, 59]) {
    const part = floats(out).subarray(second * 16000, (second + 1) * 16000);
    assert.ok(Math.abs(amplitudeAt(part, 16000, 440, 200) - 0.5) < 0.005, `second ${second}`);
  }
});
