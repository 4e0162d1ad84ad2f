import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { floats } from '../../src/audio/pcm16-audio.js';
import { decodeWav } from '../../src/audio/wav-decode.js';
import { encodeWav } from '../../src/audio/wav-encode.js';
import { speechBounds } from '../helpers/samples.js';
import {
  badRequest,
  fixtureModel,
  post,
  startServer,
  type TestServer,
  transcribe,
  withServer,
} from '../helpers/voxd.js';

const RATE = 16000;
const GAP_SECONDS = 1.5;

describe('chunking_strategy', () => {
  let s: TestServer;
  let wav: Buffer;
  let duration: number;
  /** Where the speech is, in seconds: a chunk boundary inside one of these would cut a word. */
  const speech: [number, number][] = [];

  before(async () => {
    s = await startServer({
      busy_timeout_ms: 0,
      models: [
        fixtureModel('asr'),
        { id: 'silero-vad', family: 'silero_vad', task: 'vad', lazy: true },
        { id: 'flite', family: 'flite_tts', task: 'tts', lazy: true },
      ],
    });
    const sentences = [];
    for (const [input, voice] of [
      ['The weather is lovely today in the park.', 'slt'],
      ['Please call me back tomorrow morning.', 'rms'],
    ]) {
      const res = await post(s.url, '/v1/audio/speech', { model: 'flite', input, voice });
      assert.equal(res.status, 200);
      const audio = decodeWav(res.body);
      assert.equal(audio.sampleRate, RATE);
      sentences.push(floats(audio));
    }
    // About 70 s: sentences separated by 1.5 s silences, so at least three 30 s chunks.
    const parts: Float32Array[] = [new Float32Array(0.5 * RATE)];
    let at = parts[0]!.length;
    while (at < 70 * RATE) {
      const sentence = sentences[parts.length % 2]!;
      const [a, b] = speechBounds(sentence);
      speech.push([(at + a) / RATE, (at + b) / RATE]);
      parts.push(sentence, new Float32Array(GAP_SECONDS * RATE));
      at += sentence.length + GAP_SECONDS * RATE;
    }
    parts.pop();
    parts.push(new Float32Array(0.2 * RATE));
    const samples = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
    at = 0;
    for (const part of parts) {
      samples.set(part, at);
      at += part.length;
    }
    duration = samples.length / RATE;
    wav = encodeWav({ samples, sampleRate: RATE, channels: 1 });
  });
  after(() => s.close());

  const runs = () => s.fixture.record.of('asr', 'run-start').length;
  const inSpeech = (t: number) => speech.some(([a, b]) => t > a && t < b);

  test('auto: one run per chunk, cut in silences, segments in file time', async () => {
    const before = runs();
    const res = await transcribe(s.url, 'asr', wav, {
      chunking_strategy: 'auto',
      response_format: 'verbose_json',
    });
    assert.equal(res.status, 200, res.body.toString());
    const segments: { start: number; end: number; text: string }[] = res.json.segments;
    assert.equal(runs() - before, segments.length, 'one fixture run, and one segment, per chunk');
    assert.ok(segments.length >= 3, `${segments.length} chunks of ${duration} s`);
    assert.ok(Math.abs(res.json.duration - duration) < 0.01);
    let previousEnd = 0;
    for (const [i, seg] of segments.entries()) {
      assert.ok(seg.start >= previousEnd, `segment ${i} starts at ${seg.start}, before ${previousEnd}`);
      assert.ok(seg.end - seg.start <= 30, `segment ${i} is ${seg.end - seg.start} s`);
      assert.ok(
        !inSpeech(seg.start) && !inSpeech(seg.end),
        `segment ${i} ${seg.start}-${seg.end} cuts speech`,
      );
      // The fixture reports how much audio it got: exactly the chunk.
      const report = JSON.parse(seg.text);
      assert.ok(Math.abs(report.audio.samples - (seg.end - seg.start) * RATE) <= 2, seg.text);
      previousEnd = seg.end;
    }
    // The last chunk ends its padding after the last speech, within the 0.2 s of trailing silence.
    const lastEnd = segments.at(-1)!.end;
    assert.ok(lastEnd >= speech.at(-1)![1] && duration - lastEnd < 0.3, `last end ${lastEnd} of ${duration}`);
    assert.equal(res.json.text, segments.map((seg) => seg.text).join(' '));
  });

  test('server_vad: words shifted by their chunk, srt numbered across chunks', async () => {
    const strategy = JSON.stringify({
      type: 'server_vad',
      prefix_padding_ms: 100,
      silence_duration_ms: 800,
      threshold: 0.6,
    });
    const options = JSON.stringify({ words: 'first@0-0.05 second.@0.06-0.1' });
    let before = runs();
    const res = await transcribe(s.url, 'asr', wav, {
      chunking_strategy: strategy,
      options,
      response_format: 'verbose_json',
      'timestamp_granularities[]': 'word',
    });
    assert.equal(res.status, 200, res.body.toString());
    const chunks = runs() - before;
    assert.ok(chunks >= 3);
    const words: { word: string; start: number; end: number }[] = res.json.words;
    assert.equal(words.length, 2 * chunks);
    assert.equal(res.json.text, Array(chunks).fill('first second.').join(' '));
    for (let i = 0; i < chunks; i++) {
      const start = words[2 * i]!.start;
      assert.ok(i === 0 || start > words[2 * i - 1]!.end, `chunk ${i} starts at ${start}`);
      assert.ok(!inSpeech(start), `chunk ${i} starts at ${start}, inside speech`);
      // With 100 ms of padding a chunk starts just before its first speech.
      const next = speech.find(([a]) => a >= start)!;
      assert.ok(next[0] - start <= 0.1 + 0.15, `chunk ${i} starts ${next[0] - start} s before speech`);
    }

    before = runs();
    const srt = await transcribe(s.url, 'asr', wav, {
      chunking_strategy: strategy,
      options,
      response_format: 'srt',
    });
    assert.equal(srt.status, 200);
    const numbers = srt.body
      .toString()
      .split(/\r?\n\r?\n/)
      .filter((cue) => cue.trim() !== '')
      .map((cue) => Number(cue.trim().split(/\r?\n/)[0]));
    assert.equal(runs() - before, chunks);
    assert.deepEqual(
      numbers,
      numbers.map((_, i) => i + 1),
    );
    assert.equal(numbers.length, chunks, 'one cue per chunk (its two words end a sentence)');
  });

  test('without chunking_strategy, or with audio within one chunk, the model runs once', async () => {
    let before = runs();
    const res = await transcribe(s.url, 'asr', wav, { response_format: 'verbose_json' });
    assert.equal(res.status, 200);
    assert.equal(runs() - before, 1);
    assert.equal(res.json.segments.length, 1);
    assert.equal(JSON.parse(res.json.text).audio.samples, Math.round(duration * RATE));

    const short = encodeWav({
      samples: floats(decodeWav(wav)).subarray(0, 10 * RATE),
      sampleRate: RATE,
      channels: 1,
    });
    before = runs();
    const whole = await transcribe(s.url, 'asr', short, { chunking_strategy: 'auto' });
    assert.equal(whole.status, 200);
    assert.equal(runs() - before, 1);
    assert.equal(JSON.parse(whole.json.text).audio.samples, 10 * RATE);
  });

  test('a bad chunking_strategy, or one with stream, is a 400', async () => {
    const before = runs();
    badRequest(
      await transcribe(s.url, 'asr', wav, { chunking_strategy: 'manual' }),
      'chunking_strategy',
      '"manual"',
    );
    badRequest(
      await transcribe(s.url, 'asr', wav, { chunking_strategy: '{"type":"server_vad","threshold":2}' }),
      'chunking_strategy.threshold',
      '2',
    );
    badRequest(
      await transcribe(s.url, 'asr', wav, { chunking_strategy: 'auto', stream: 'true' }),
      'chunking_strategy',
      'stream',
    );
    assert.equal(runs() - before, 0);
  });
});

test('chunking_strategy without the chunking_vad_model registered is a 400 naming it', async () => {
  await withServer({ chunking_vad_model: 'my-vad', models: [fixtureModel('asr')] }, async (s) => {
    const wav = encodeWav({ samples: new Float32Array(RATE), sampleRate: RATE, channels: 1 });
    badRequest(
      await transcribe(s.url, 'asr', wav, { chunking_strategy: 'auto' }),
      'chunking_vad_model',
      '"my-vad"',
    );
    assert.equal(s.fixture.record.of('asr', 'run-start').length, 0);
  });
});
