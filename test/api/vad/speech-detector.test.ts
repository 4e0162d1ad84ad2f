/**
 * The server VAD's turn finding (src/api/vad/speech-detector.ts) with a probe that reads
 * speech from the samples themselves (1 = speech, 0 = silence), so every position is known: where
 * a turn starts and stops, that each sample is examined once whatever the pace, the idle timeout,
 * the longest turn, and a failing VAD model told once. The real silero model is driven by the
 * engine tests (test/engines/pocketsphinx/realtime.test.ts).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SampleBuffer } from '../../../src/api/vad/sample-buffer.js';
import { type DetectorEvents, type Probe, SpeechDetector } from '../../../src/api/vad/speech-detector.js';
import { type ServerVad, turnDetection } from '../../../src/http/realtime/turn-detection.js';

const RATE = 1000; // one sample a millisecond: positions read as ms

/** Runs of ones, in seconds from the window's start; every window the probe saw, by length. */
function runsProbe(seen: number[]): Probe {
  return async (samples) => {
    seen.push(samples.length);
    const spans: { start: number; end: number }[] = [];
    let from = -1;
    for (let i = 0; i <= samples.length; i++) {
      const on = i < samples.length && samples[i] === 1;
      if (on && from < 0) from = i;
      if (!on && from >= 0) {
        spans.push({ start: from / RATE, end: i / RATE });
        from = -1;
      }
    }
    return spans;
  };
}

/** A signal: [ms, speech?] pieces. */
const signal = (...parts: [number, 0 | 1][]) => {
  const out: number[] = [];
  for (const [ms, v] of parts) for (let i = 0; i < ms; i++) out.push(v);
  return Float32Array.from(out);
};

function harness(vad: ServerVad, probe: Probe, maxTurnSeconds = 120) {
  const buffer = new SampleBuffer();
  const log: string[] = [];
  const failures: unknown[] = [];
  const events: DetectorEvents = {
    started: (p) => log.push(`start ${p}`),
    examined: () => undefined,
    stopped: (p, to) => log.push(`stop ${p} at ${to}`),
    idle: (from, to) => log.push(`idle ${from}-${to}`),
    failed: (err) => failures.push(err),
  };
  const detector = new SpeechDetector(buffer, RATE, vad, probe, events, maxTurnSeconds);
  /** Appends `samples` in pieces of `piece`, letting each probe finish (as appends arrive in time). */
  const feed = async (samples: Float32Array, piece: number) => {
    for (let at = 0; at < samples.length; at += piece) {
      buffer.append(samples.slice(at, at + piece));
      detector.update();
      for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    }
  };
  return { buffer, detector, log, failures, feed };
}

const vad = (fields: Record<string, unknown> = {}) =>
  turnDetection({ type: 'server_vad', silence_duration_ms: 500, prefix_padding_ms: 300, ...fields } as never);

describe('SpeechDetector', () => {
  test('a turn starts where speech does and stops once its silence window has passed', async () => {
    const seen: number[] = [];
    const h = harness(vad(), runsProbe(seen));
    await h.feed(signal([1000, 0], [1500, 1], [300, 0], [400, 1], [1200, 0], [800, 1], [700, 0]), 100);
    // The 300 ms pause is shorter than the 500 ms window: one turn across it.
    assert.deepEqual(h.log, ['start 1000', 'stop 3200 at 3700', 'start 4400', 'stop 5200 at 5700']);
    assert.ok(
      seen.every((n) => n <= 700 + 500),
      `windows: ${seen}`,
    );
  });

  test('audio sent faster than real time is examined in order, each turn ending where its silence did', async () => {
    const h = harness(vad(), runsProbe([]));
    // All of it at once, then nothing: the probes catch up on their own.
    h.buffer.append(signal([1000, 0], [1500, 1], [1200, 0], [800, 1], [8000, 0], [900, 1], [1000, 0]));
    h.detector.update();
    for (let i = 0; i < 200; i++) await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(h.log, [
      'start 1000',
      'stop 2500 at 3000',
      'start 3700',
      'stop 4500 at 5000',
      'start 12500',
      'stop 13400 at 13900',
    ]);
  });

  test('idle_timeout_ms: quiet audio past it is reported once per timeout, counted again after each turn', async () => {
    const h = harness(vad({ idle_timeout_ms: 1000 }), runsProbe([]));
    await h.feed(signal([2100, 0], [600, 1], [1800, 0]), 100);
    assert.deepEqual(h.log, [
      'idle 0-1000',
      'idle 1000-2000',
      'start 2100',
      'stop 2700 at 3200',
      'idle 3200-4200',
    ]);
  });

  test('a turn at its longest is cut there and the next goes on', async () => {
    const h = harness(vad(), runsProbe([]), 2);
    await h.feed(signal([500, 0], [3000, 1], [600, 0]), 100);
    assert.deepEqual(h.log, ['start 500', 'stop 2500 at 2500', 'start 2500', 'stop 3500 at 4000']);
  });

  test('reset (a cleared buffer) forgets the speech going on', async () => {
    const h = harness(vad(), runsProbe([]));
    await h.feed(signal([300, 0], [600, 1]), 100);
    assert.deepEqual(h.log, ['start 300']);
    h.buffer.clear();
    h.detector.reset();
    assert.equal(h.detector.speaking, false);
    await h.feed(signal([1000, 0]), 100);
    assert.deepEqual(h.log, ['start 300']);
  });

  test('a failing VAD model is reported once per streak, and detection resumes when it answers', async () => {
    let failing = true;
    const probe = runsProbe([]);
    const h = harness(vad(), (samples, threshold) =>
      failing ? Promise.reject(new Error('busy')) : probe(samples, threshold),
    );
    await h.feed(signal([1000, 0]), 100);
    assert.equal(h.failures.length, 1);
    failing = false;
    await h.feed(signal([700, 1], [600, 0]), 100);
    assert.deepEqual(h.log, ['start 1000', 'stop 1700 at 2200']);
    failing = true;
    await h.feed(signal([400, 0]), 100);
    assert.equal(h.failures.length, 2);
  });

  test('the buffer needs only the context and the prefix padding before speech', async () => {
    const h = harness(vad(), runsProbe([]));
    await h.feed(signal([5000, 0]), 100);
    assert.ok(h.detector.oldestNeeded >= 5000 - 200 - 500 - 300, String(h.detector.oldestNeeded));
  });

  test('semantic_vad maps its eagerness to the silence window', () => {
    const silence = (eagerness: string) =>
      turnDetection({ type: 'semantic_vad', eagerness } as never).silenceDurationMs;
    assert.deepEqual(['low', 'medium', 'high', 'auto'].map(silence), [1200, 700, 350, 700]);
  });
});
