import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { resample } from '../../../src/audio/convert.js';
import { floats } from '../../../src/audio/pcm16-audio.js';
import type { Audio } from '../../../src/audio/types.js';
import { decodeWav } from '../../../src/audio/wav-decode.js';
import { encodeWav } from '../../../src/audio/wav-encode.js';
import { FLITE, lazyModel } from '../../helpers/models.js';
import { speechBounds } from '../../helpers/samples.js';
import { engineSuiteServer } from '../../helpers/suite-server.js';
import { errorOf, post } from '../../helpers/voxd.js';

const RATE = 16000;
const TOLERANCE = 0.1 * RATE; // 100 ms

describe('silero_vad', () => {
  const s = engineSuiteServer([FLITE, lazyModel('vad', 'silero_vad', 'vad')]);

  const speak = async (input: string, voice: string) => {
    const res = await post(s.url, '/v1/audio/speech', { model: 'flite', input, voice });
    assert.equal(res.status, 200);
    return floats(decodeWav(res.body));
  };
  const vad = (audio: Audio) =>
    post(s.url, '/v1/tasks/run', { model: 'vad', audio_base64: encodeWav(audio).toString('base64') });

  const cases = [
    ['The weather is lovely today in the park.', 'rms', 'Please call me back tomorrow morning.', 'slt'],
    ['Seven happy children watch from the bridge.', 'kal16', 'Turn left at the second traffic light.', 'awb'],
  ] as const;
  for (const [first, firstVoice, second, secondVoice] of cases)
    test(`speech segments of a synthesised file with known silences match within 100 ms (${firstVoice}, ${secondVoice})`, async () => {
      const parts = [
        new Float32Array(0.6 * RATE),
        await speak(first, firstVoice),
        new Float32Array(1.2 * RATE),
        await speak(second, secondVoice),
        new Float32Array(0.8 * RATE),
      ];
      const truth: [number, number][] = [];
      let offset = 0;
      for (const [i, part] of parts.entries()) {
        if (i % 2 === 1) {
          const [a, b] = speechBounds(part);
          truth.push([offset + a, offset + b]);
        }
        offset += part.length;
      }
      const samples = new Float32Array(offset);
      offset = 0;
      for (const part of parts) {
        samples.set(part, offset);
        offset += part.length;
      }
      const res = await vad({ samples, sampleRate: RATE, channels: 1 });
      assert.equal(res.status, 200, res.body.toString());
      const segments = res.json.segments as { start_sample: number; end_sample: number }[];
      assert.equal(segments.length, 2, JSON.stringify(segments));
      for (const [i, [start, end]] of truth.entries()) {
        assert.ok(
          Math.abs(segments[i]!.start_sample - start) <= TOLERANCE,
          `segment ${i} start ${segments[i]!.start_sample} vs ${start}`,
        );
        assert.ok(
          Math.abs(segments[i]!.end_sample - end) <= TOLERANCE,
          `segment ${i} end ${segments[i]!.end_sample} vs ${end}`,
        );
      }

      // The same file as 44.1 kHz stereo is converted first and gives the same segments.
      const mono = { samples, sampleRate: RATE, channels: 1 };
      const hi = resample(mono, 44100);
      const stereo = new Float32Array(floats(hi).length * 2);
      floats(hi).forEach((x, i) => {
        stereo[2 * i] = x;
        stereo[2 * i + 1] = x;
      });
      const converted = await vad({ samples: stereo, sampleRate: 44100, channels: 2 });
      const again = converted.json.segments as { start_sample: number; end_sample: number }[];
      assert.equal(again.length, 2);
      for (const [i, seg] of again.entries())
        assert.ok(Math.abs(seg.start_sample - segments[i]!.start_sample) <= TOLERANCE);
    });

  test('silence, a 1-sample file and a 10-minute file give correct results, never a crash', async () => {
    const silent = await vad({ samples: new Float32Array(3 * RATE), sampleRate: RATE, channels: 1 });
    assert.deepEqual(silent.json.segments, []);
    const one = await vad({ samples: new Float32Array([0.5]), sampleRate: RATE, channels: 1 });
    assert.equal(one.status, 200);
    assert.deepEqual(one.json.segments, []);
    const long = await vad({ samples: new Float32Array(600 * RATE), sampleRate: RATE, channels: 1 });
    assert.equal(long.status, 200);
    assert.deepEqual(long.json.segments, []);
  });

  test('missing or corrupt audio is a clear 400', async () => {
    assert.match(
      errorOf(await post(s.url, '/v1/tasks/run', { model: 'vad' }), 400, 'invalid_request_error'),
      /audio/,
    );
    const corrupt = await post(s.url, '/v1/tasks/run', {
      model: 'vad',
      audio_base64: Buffer.from('not a wav at all').toString('base64'),
    });
    assert.match(
      errorOf(corrupt, 400, 'invalid_request_error'),
      /audio_base64: the audio could not be decoded/,
    );
  });
});
