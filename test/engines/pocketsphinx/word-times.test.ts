/**
 * Issue 23: pocketsphinx times its words (its segmentation, fillers left out), so verbose_json has
 * words and segments split at pauses, and srt/vtt have a cue per phrase. Two LibriVox sentences
 * 1.5 s apart over a real voxd on loopback; the words after the pause must start after it (the
 * voice detector pocketsphinx runs by default would drop the pause's frames and time them early).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { joinedWav, LIBRIVOX_RATE, librivoxSamples, transcribeFile } from '../../helpers/librivox.js';
import { sseEvents } from '../../helpers/sse.js';
import { post, startServer, type TestServer } from '../../helpers/voxd.js';

const PAUSE = 1.5;
const { wav, starts } = joinedWav(['0880', '0930'], PAUSE);
const firstEnds = librivoxSamples('0880').length / LIBRIVOX_RATE;
const secondStarts = starts[1]! / LIBRIVOX_RATE;
const duration = (wav.length - 44) / 2 / LIBRIVOX_RATE;

interface TimedWord {
  word: string;
  start: number;
  end: number;
}

describe('pocketsphinx word times', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer({
      models: [
        { id: 'asr', family: 'pocketsphinx_asr', task: 'asr', lazy: true },
        { id: 'asr-steps', family: 'pocketsphinx_asr', task: 'asr', lazy: true, mode: 'streaming' },
      ],
    });
  });
  after(() => s.close());

  const answer = (format: string) =>
    transcribeFile(s.url, 'asr', wav, 'two.wav', {
      response_format: format,
      'timestamp_granularities[]': 'word',
      'timestamp_granularities[]#2': 'segment',
    });

  test('verbose_json: the words in order, apart, inside the audio, spelling the text; a segment per sentence', async () => {
    const json = (await answer('verbose_json')).json as {
      text: string;
      duration: number;
      words: TimedWord[];
      segments: { start: number; end: number; text: string }[];
    };
    const { words, segments } = json;
    assert.ok(words.length >= 10, `words: ${JSON.stringify(words)}`);
    assert.equal(words.map((w) => w.word).join(' '), json.text, 'the words are the text');
    assert.ok(
      words.every((w) => /^[a-z']+$/.test(w.word)),
      'no fillers, no (2) suffixes',
    );
    words.forEach((w, i) => {
      assert.ok(w.start >= 0 && w.end > w.start && w.end <= json.duration, `${w.word}: ${w.start}-${w.end}`);
      const next = words[i + 1];
      if (next) assert.ok(w.end <= next.start, `${w.word} ends ${w.end}, ${next.word} starts ${next.start}`);
    });
    assert.equal(json.duration, Math.round(duration * 1000) / 1000);
    assert.ok(segments.length >= 2, `one segment per sentence: ${JSON.stringify(segments)}`);
    assert.equal(segments.map((x) => x.text).join(' '), json.text);
    const cut = segments.findIndex((x) => x.start >= firstEnds);
    assert.ok(
      cut > 0,
      `a segment starts after the first sentence (${firstEnds} s): ${JSON.stringify(segments)}`,
    );
    assert.ok(segments[cut - 1]!.end <= firstEnds, 'the segment before it ends with the first sentence');
    assert.ok(
      segments[cut]!.start >= secondStarts,
      `the second sentence is heard after the ${PAUSE} s pause (${secondStarts} s), not at ${segments[cut]!.start} s`,
    );
  });

  test('srt and vtt: a cue per sentence, the same times as the segments', async () => {
    const segments = (await answer('verbose_json')).json.segments as { start: number; end: number }[];
    const srt = (await answer('srt')).body.toString();
    const vtt = (await answer('vtt')).body.toString();
    const srtCues = [...srt.matchAll(/(\d\d):(\d\d):(\d\d),(\d{3}) --> /g)];
    const vttCues = [...vtt.matchAll(/(\d\d):(\d\d):(\d\d)\.(\d{3}) --> /g)];
    assert.ok(srtCues.length >= 2, srt);
    assert.equal(srtCues.length, segments.length, srt);
    assert.equal(vttCues.length, segments.length, vtt);
    const seconds = (m: RegExpMatchArray) =>
      Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3]) + Number(m[4]) / 1000;
    assert.deepEqual(
      srtCues.map(seconds),
      segments.map((x) => x.start),
    );
    assert.deepEqual(
      vttCues.map(seconds),
      segments.map((x) => x.start),
    );
  });

  test('/v1/tasks/run: words in samples with the lattice posterior as confidence', async () => {
    const res = await post(s.url, '/v1/tasks/run', { model: 'asr', audio_base64: wav.toString('base64') });
    assert.equal(res.status, 200, res.body.toString());
    const words = res.json.words as {
      word: string;
      start_sample: number;
      end_sample: number;
      confidence: number;
    }[];
    assert.ok(words.length >= 10);
    const samples = (wav.length - 44) / 2;
    for (const w of words) {
      assert.ok(Number.isInteger(w.start_sample) && Number.isInteger(w.end_sample));
      assert.ok(w.start_sample < w.end_sample && w.end_sample <= samples, JSON.stringify(w));
      assert.ok(w.confidence >= 0 && w.confidence <= 1, JSON.stringify(w));
    }
    assert.ok(
      words.some((w) => w.confidence > 0 && w.confidence < 1),
      `posteriors, not a constant: ${words.map((w) => w.confidence).join(' ')}`,
    );
  });

  test('/v1/tasks/stream after a long offline request: the words decoded in steps are timed in this audio', async () => {
    // The library numbers a stepped decode's frames from a count that runs on from earlier
    // utterances once its frame buffer wraps (about 8 s); this one is 7.8 s, after 31 s offline.
    const long = joinedWav(['0870', '0920', '0890', '0880', '0930'], 2).wav;
    const offline = await post(s.url, '/v1/tasks/run', {
      model: 'asr-steps',
      audio_base64: long.toString('base64'),
    });
    assert.equal(offline.status, 200);
    const res = await post(s.url, '/v1/tasks/stream', {
      model: 'asr-steps',
      audio_base64: wav.toString('base64'),
      stream_format: 'sse',
    });
    assert.equal(res.status, 200, res.body.toString());
    const done = sseEvents(res.body).find((e) => e !== '[DONE]' && e.type === 'task.stream.done');
    const words = (
      done as { result: { words: { word: string; start_sample: number; end_sample: number }[] } }
    ).result.words;
    assert.ok(words.length >= 10, JSON.stringify(done));
    const samples = (wav.length - 44) / 2;
    words.forEach((w, i) => {
      assert.ok(w.start_sample < w.end_sample && w.end_sample <= samples, JSON.stringify(w));
      if (i > 0)
        assert.ok(words[i - 1]!.end_sample <= w.start_sample, JSON.stringify(words.slice(i - 1, i + 1)));
    });
    assert.ok(
      words[0]!.start_sample < starts[1]!,
      `the first sentence is heard first: ${JSON.stringify(words[0])}`,
    );
    assert.ok(
      words.some((w) => w.start_sample >= starts[1]!),
      `the second sentence after the pause: ${JSON.stringify(words)}`,
    );
  });
});
