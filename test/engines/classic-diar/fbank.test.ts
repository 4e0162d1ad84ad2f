import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  EMBEDDING_DIM,
  embed,
  FRAME_SHIFT,
  fft,
  frameCount,
  logMel,
  melFilters,
  NUM_BANDS,
  SAMPLE_RATE,
} from '../../../src/engines/classic-diar/fbank.js';

const tone = (hz: number, seconds = 0.5, amplitude = 0.3) =>
  Float32Array.from(
    { length: seconds * SAMPLE_RATE },
    (_, i) => amplitude * Math.sin((2 * Math.PI * hz * i) / SAMPLE_RATE),
  );

const mel = (hz: number) => 1127 * Math.log(1 + hz / 700);

/** The band whose centre (evenly spaced on the mel scale, 20 Hz..8 kHz) is nearest to `hz`. */
function expectedBand(hz: number): number {
  const low = mel(20);
  const delta = (mel(8000) - low) / (NUM_BANDS + 1);
  let best = 0;
  for (let b = 0; b < NUM_BANDS; b++)
    if (Math.abs(low + (b + 1) * delta - mel(hz)) < Math.abs(low + (best + 1) * delta - mel(hz))) best = b;
  return best;
}

describe('classic_diar fbank', () => {
  test('the FFT matches a direct DFT', () => {
    const n = 512;
    const x = Array.from({ length: n }, (_, i) => Math.sin(i * 0.37) + ((i * 7919) % 13) / 13 - 0.5);
    const re = Float64Array.from(x);
    const im = new Float64Array(n);
    fft(re, im);
    for (const k of [0, 1, 17, 128, 255, 256, 300, 511]) {
      let dr = 0;
      let di = 0;
      for (let t = 0; t < n; t++) {
        dr += x[t]! * Math.cos((-2 * Math.PI * k * t) / n);
        di += x[t]! * Math.sin((-2 * Math.PI * k * t) / n);
      }
      assert.ok(Math.abs(re[k]! - dr) < 1e-9 && Math.abs(im[k]! - di) < 1e-9, `bin ${k}`);
    }
  });

  test('80 triangular mel filters cover 20 Hz..8 kHz in order, each peaking at 1 or less', () => {
    const filters = melFilters();
    assert.equal(filters.length, NUM_BANDS);
    for (const [b, f] of filters.entries()) {
      assert.ok(f.weights.length > 0, `band ${b} is empty`);
      assert.ok(Math.max(...f.weights) <= 1 && Math.min(...f.weights) > 0, `band ${b}`);
      if (b > 0) assert.ok(f.first >= filters[b - 1]!.first, `band ${b} starts before band ${b - 1}`);
    }
    assert.ok(filters[0]!.first * (SAMPLE_RATE / 512) >= 20);
    assert.ok((filters.at(-1)!.first + filters.at(-1)!.weights.length - 1) * (SAMPLE_RATE / 512) <= 8000);
  });

  for (const hz of [250, 1000, 3000, 6500])
    test(`a ${hz} Hz tone puts its energy in the mel band centred nearest ${hz} Hz`, () => {
      const { frames, data } = logMel(tone(hz));
      assert.equal(frames, frameCount(0.5 * SAMPLE_RATE));
      const band = expectedBand(hz);
      for (const f of [0, Math.floor(frames / 2), frames - 1]) {
        const row = Array.from(data.subarray(f * NUM_BANDS, (f + 1) * NUM_BANDS));
        const loudest = row.indexOf(Math.max(...row));
        assert.equal(loudest, band, `frame ${f}: loudest band ${loudest}, expected ${band}`);
        // Far bands get almost nothing: at least 40 dB below the peak.
        const far = row.filter((_, b) => Math.abs(b - band) > 10);
        assert.ok(Math.max(...far) < row[band]! - 4 * Math.LN10, `frame ${f} leaks`);
      }
    });

  test('frames: 25 ms windows every 10 ms, none past the end', () => {
    assert.equal(frameCount(399), 0);
    assert.equal(frameCount(400), 1);
    assert.equal(frameCount(400 + FRAME_SHIFT - 1), 1);
    assert.equal(frameCount(SAMPLE_RATE), 98);
    assert.equal(logMel(new Float32Array(SAMPLE_RATE)).data.length, 98 * NUM_BANDS);
  });

  test('the embedding: 160 dims, unit length, independent of gain; null for silence or under a frame', () => {
    let seed = 1;
    const noise = () => {
      seed = (seed * 16807) % 2147483647;
      return (seed / 2147483647 - 0.5) * 0.02;
    };
    const voiced = Float32Array.from(
      { length: SAMPLE_RATE },
      (_, i) => 0.2 * Math.sin((2 * Math.PI * 140 * i) / SAMPLE_RATE) * (1 + Math.sin(i / 900)) + noise(),
    );
    const e = embed(voiced)!;
    assert.equal(e.length, EMBEDDING_DIM);
    assert.ok(Math.abs(Math.hypot(...e) - 1) < 1e-5);
    const louder = embed(voiced.map((x) => 4 * x))!;
    const similarity = e.reduce((s, x, i) => s + x * louder[i]!, 0);
    assert.ok(similarity > 0.999, `gain changed the embedding: similarity ${similarity}`);
    const other = embed(tone(2500, 1))!;
    assert.ok(e.reduce((s, x, i) => s + x * other[i]!, 0) < 0.9, 'a different sound embeds alike');
    assert.equal(embed(new Float32Array(SAMPLE_RATE)), null);
    assert.equal(embed(voiced, 0, 399), null);
  });
});
