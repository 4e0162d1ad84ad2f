import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { resample } from '../../../src/audio/convert.js';
import { floats } from '../../../src/audio/pcm16-audio.js';
import { decodeWav } from '../../../src/audio/wav-decode.js';
import { encodeWav } from '../../../src/audio/wav-encode.js';
import { lazyModel } from '../../helpers/models.js';
import { sseEvents } from '../../helpers/sse.js';
import { engineSuiteServer } from '../../helpers/suite-server.js';
import { errorOf, post, request, withServer } from '../../helpers/voxd.js';

const SENTENCES = [
  'Please bring the blue umbrella when you leave the house.',
  'The train to the city leaves every hour in the morning.',
  'My brother likes to read a good book before he goes to sleep.',
  'We should buy fresh bread and milk at the market today.',
  'The children played in the garden until it started to rain.',
  'Can you tell me where the nearest post office is?',
  'She opened the window because the room was too warm.',
  'Our neighbors are planning a small party on the weekend.',
  'He forgot his keys on the kitchen table again.',
  'The doctor said I should drink more water every day.',
];

const words = (text: string) =>
  text
    .toLowerCase()
    .replace(/[^a-z' ]/g, ' ')
    .split(/\s+/)
    .filter(Boolean);

/** Word-level edit distance. */
function errors(reference: string[], hypothesis: string[]): number {
  let previous = Array.from({ length: hypothesis.length + 1 }, (_, j) => j);
  for (let i = 1; i <= reference.length; i++) {
    const row = [i];
    for (let j = 1; j <= hypothesis.length; j++) {
      row[j] = Math.min(
        previous[j]! + 1,
        row[j - 1]! + 1,
        previous[j - 1]! + (reference[i - 1] === hypothesis[j - 1] ? 0 : 1),
      );
    }
    previous = row;
  }
  return previous[hypothesis.length]!;
}

const workDir = mkdtempSync(join(tmpdir(), 'voxd-ps-formats-'));
after(() => rmSync(workDir, { recursive: true, force: true }));

/** A WAV turned into another container by the ffmpeg command line (Vorbis in Ogg, Opus in WebM, AAC in M4A). */
function convert(wav: Buffer, container: string, i: number): Buffer {
  const input = join(workDir, `${i}-${container}.wav`);
  const output = join(workDir, `${i}.${container}`);
  writeFileSync(input, wav);
  const codec = { ogg: 'libvorbis', webm: 'libopus', m4a: 'aac' }[container] ?? 'copy';
  execFileSync('ffmpeg', ['-v', 'error', '-y', '-i', input, '-c:a', codec, output]);
  return readFileSync(output);
}

describe('pocketsphinx_asr', () => {
  const s = engineSuiteServer(
    [
      lazyModel('flite', 'flite_tts', 'tts', { slots: 2 }),
      lazyModel('asr', 'pocketsphinx_asr', 'asr', { slots: 2 }),
      lazyModel('asr-stream', 'pocketsphinx_asr', 'asr', { mode: 'streaming' }),
    ],
    { parallel: true },
  );

  const transcribe = async (wav: Buffer, filename = 'a.wav') => {
    const form = new FormData();
    form.set('model', 'asr');
    form.set('file', new Blob([wav]), filename);
    return request(s.url, 'POST', '/v1/audio/transcriptions', { body: form });
  };

  /**
   * Speaks the 10 sentences in `format` (or as WAV turned into `container` by the ffmpeg command
   * line), sends the bytes back as uploads: the word error rate.
   */
  async function roundTripWer(
    format: string,
    container?: string,
  ): Promise<{ wer: number; hypotheses: string[] }> {
    const hypotheses = await Promise.all(
      SENTENCES.map(async (sentence, i) => {
        const speech = await post(s.url, '/v1/audio/speech', {
          model: 'flite',
          input: sentence,
          voice: 'kal16',
          response_format: format,
        });
        assert.equal(speech.status, 200);
        const upload = container ? convert(speech.body, container, i) : speech.body;
        const res = await transcribe(upload, `a.${container ?? format}`);
        assert.equal(res.status, 200, res.body.toString());
        return res.json.text as string;
      }),
    );
    let wrong = 0;
    let total = 0;
    for (const [i, sentence] of SENTENCES.entries()) {
      wrong += errors(words(sentence), words(hypotheses[i]!));
      total += words(sentence).length;
    }
    return { wer: wrong / total, hypotheses };
  }

  let wavWer = Number.NaN;

  test('round trip: 10 sentences spoken by flite kal16 are transcribed with a word error rate of at most 10 %', async () => {
    const { wer, hypotheses } = await roundTripWer('wav');
    wavWer = wer;
    assert.ok(wer <= 0.1, `WER ${(wer * 100).toFixed(1)} %: ${hypotheses.join(' | ')}`);
  });

  test('the round trip through mp3, opus, aac, flac, Ogg Vorbis, WebM and M4A keeps the WER of the WAV path', async () => {
    assert.ok(!Number.isNaN(wavWer), 'the WAV round trip ran first');
    const runs: [string, string | undefined][] = [
      ['mp3', undefined],
      ['opus', undefined],
      ['aac', undefined],
      ['flac', undefined],
      ['wav', 'ogg'],
      ['wav', 'webm'],
      ['wav', 'm4a'],
    ];
    for (const [format, container] of runs) {
      const { wer, hypotheses } = await roundTripWer(format, container);
      assert.ok(
        wer <= wavWer + 0.03,
        `${container ?? format}: WER ${(wer * 100).toFixed(1)} % vs ${(wavWer * 100).toFixed(1)} % for WAV: ${hypotheses.join(' | ')}`,
      );
    }
  });

  test('the same speech as 44.1 kHz stereo gives the same transcript', async () => {
    const speech = await post(s.url, '/v1/audio/speech', {
      model: 'flite',
      input: SENTENCES[0],
      voice: 'kal16',
    });
    const mono = decodeWav(speech.body);
    const hi = resample(mono, 44100);
    const stereo = new Float32Array(floats(hi).length * 2);
    floats(hi).forEach((x, i) => {
      stereo[2 * i] = x;
      stereo[2 * i + 1] = x;
    });
    const a = await transcribe(speech.body);
    const b = await transcribe(encodeWav({ samples: stereo, sampleRate: 44100, channels: 2 }));
    assert.equal(b.status, 200);
    const wer = errors(words(a.json.text), words(b.json.text)) / words(a.json.text).length;
    assert.ok(wer <= 0.2, `${a.json.text} | ${b.json.text}`);
  });

  test('silence and a 1-sample file give an empty transcript; a corrupt WAV is a 400', async () => {
    const silent = await transcribe(
      encodeWav({ samples: new Float32Array(32000), sampleRate: 16000, channels: 1 }),
    );
    assert.equal(silent.status, 200);
    assert.equal(silent.json.text, '');
    const one = await transcribe(
      encodeWav({ samples: new Float32Array([0.2]), sampleRate: 16000, channels: 1 }),
    );
    assert.equal(one.status, 200);
    assert.equal(typeof one.json.text, 'string');
    assert.match(
      errorOf(await transcribe(Buffer.from('RIFF....garbage')), 400, 'invalid_request_error'),
      /file:/,
    );
  });

  test('a missing model folder is a clear error naming the file and the packages', async () => {
    await withServer(
      {
        models: [
          { id: 'x', family: 'pocketsphinx_asr', task: 'asr', lazy: true, path: '/nonexistent/en-us' },
        ],
      },
      async (bad) => {
        const res = await post(bad.url, '/v1/tasks/run', {
          model: 'x',
          audio_base64: encodeWav({
            samples: new Float32Array(160),
            sampleRate: 16000,
            channels: 1,
          }).toString('base64'),
        });
        assert.match(
          errorOf(res, 400, 'invalid_request_error'),
          /not found: \/nonexistent\/en-us\/en-us.*pocketsphinx-en-us/,
        );
      },
    );
  });

  test('a streamed transcription sends the words as they settle, then the full text', async () => {
    const speech = await post(s.url, '/v1/audio/speech', {
      model: 'flite',
      input: 'Please bring the blue umbrella when you leave the house. It will rain later today.',
    });
    const form = new FormData();
    form.set('model', 'asr-stream');
    form.set('stream', 'true');
    form.set('file', new Blob([speech.body]), 'a.wav');
    const res = await request(s.url, 'POST', '/v1/audio/transcriptions', { body: form });
    assert.equal(res.status, 200);
    const events = sseEvents(res.body);
    assert.equal(events.at(-1), '[DONE]');
    const parsed = events.slice(0, -1) as { type: string; delta?: string; text?: string }[];
    const deltas = parsed.filter((e) => e.type === 'transcript.text.delta').map((e) => e.delta!);
    const done = parsed.at(-1)!;
    assert.equal(done.type, 'transcript.text.done');
    assert.ok(
      deltas.length >= 3,
      `words arrive while the audio is decoded, not at the end: ${JSON.stringify(deltas)}`,
    );
    assert.equal(deltas.join(''), done.text, 'the deltas add up to the final text');
    assert.ok(
      words(done.text!).filter((w) => ['umbrella', 'house', 'rain'].includes(w)).length >= 2,
      done.text,
    );
  });
});
