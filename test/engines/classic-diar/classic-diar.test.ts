import assert from 'node:assert/strict';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { describe, test } from 'node:test';
import { floats } from '../../../src/audio/pcm16-audio.js';
import { decodeWav } from '../../../src/audio/wav-decode.js';
import { encodeWav } from '../../../src/audio/wav-encode.js';
import { FLITE, lazyModel } from '../../helpers/models.js';
import { concat, GAPS, SENTENCES, speechBounds } from '../../helpers/samples.js';
import { sseEvents } from '../../helpers/sse.js';
import { engineSuiteServer } from '../../helpers/suite-server.js';
import { errorOf, type HttpResult, post, request } from '../../helpers/voxd.js';
import { diarizationError, type RefTurn } from './der.js';

const RATE = 16000;

interface Turn {
  start_sample: number;
  end_sample: number;
  speaker_id: number;
  confidence: number;
}

const hypothesis = (turns: Turn[]): RefTurn[] =>
  turns.map((t) => ({ start: t.start_sample, end: t.end_sample, speaker: t.speaker_id }));

/** Asserts the shape every answer shares: ordered, in bounds, ids 0.. by first appearance. */
function checkTurns(turns: Turn[], length: number): void {
  let seen = -1;
  let previousEnd = 0;
  for (const t of turns) {
    assert.ok(t.start_sample >= previousEnd && t.end_sample > t.start_sample, JSON.stringify(t));
    assert.ok(t.end_sample <= length);
    assert.ok(t.confidence >= 0 && t.confidence <= 1);
    assert.ok(
      Number.isInteger(t.speaker_id) && t.speaker_id <= seen + 1,
      `speaker ${t.speaker_id} after ${seen}`,
    );
    seen = Math.max(seen, t.speaker_id);
    previousEnd = t.end_sample;
  }
}

describe('classic_diar', () => {
  const s = engineSuiteServer([
    FLITE,
    lazyModel('diar', 'classic_diar', 'diar'),
    lazyModel('diar-stream', 'classic_diar', 'diar', { mode: 'streaming' }),
  ]);
  const voices = new Map<string, Float32Array>();

  const speak = async (input: string, voice: string) => {
    const key = `${voice}:${input}`;
    let samples = voices.get(key);
    if (!samples) {
      const res = await post(s.url, '/v1/audio/speech', { model: 'flite', input, voice });
      assert.equal(res.status, 200);
      const raw = floats(decodeWav(res.body));
      samples = raw.slice(...speechBounds(raw));
      voices.set(key, samples);
    }
    return samples;
  };

  /** Turn i is spoken by voices[i % 2] (the same voice twice gives a one-speaker file). */
  const conversation = async (pair: [string, string], gaps = GAPS) => {
    const parts: Float32Array[] = [new Float32Array(0.5 * RATE)];
    const truth: RefTurn[] = [];
    let offset = parts[0]!.length;
    for (const [i, sentence] of SENTENCES.entries()) {
      // Trimmed to the speech itself, so the gaps are the real pauses between turns.
      const speech = await speak(sentence, pair[i % 2]!);
      truth.push({ start: offset, end: offset + speech.length, speaker: i % 2 });
      const gap = new Float32Array(Math.round(gaps[i]! * RATE));
      parts.push(speech, gap);
      offset += speech.length + gap.length;
    }
    return { samples: concat(parts), truth };
  };

  const transcribe = (samples: Float32Array, fields: Record<string, string> = {}): Promise<HttpResult> => {
    const form = new FormData();
    form.append('model', 'diar');
    for (const [key, value] of Object.entries(fields)) form.append(key, value);
    const wav = encodeWav({ samples, sampleRate: RATE, channels: 1 });
    form.append('file', new Blob([wav], { type: 'audio/wav' }), 'talk.wav');
    return request(s.url, 'POST', '/v1/audio/transcriptions', { body: form });
  };
  const run = (samples: Float32Array, extra: Record<string, unknown> = {}) =>
    post(s.url, '/v1/tasks/run', {
      model: 'diar',
      audio_base64: encodeWav({ samples, sampleRate: RATE, channels: 1 }).toString('base64'),
      ...extra,
    });

  for (const pair of [
    ['rms', 'slt'],
    ['rms', 'awb'],
  ] as [string, string][])
    test(`two voices (${pair.join(', ')}), 10 turns, speaker count unknown: DER <= 10 %`, async (t) => {
      const { samples, truth } = await conversation(pair);
      assert.ok(samples.length > 25 * RATE, `only ${samples.length / RATE} s`);
      const res = await transcribe(samples);
      assert.equal(res.status, 200, res.body.toString());
      assert.equal(res.json.text, '');
      assert.equal(res.json.sample_rate, RATE);
      assert.equal(typeof res.json.timing.wall_ms, 'number');
      const turns = res.json.speaker_turns as Turn[];
      checkTurns(turns, samples.length);
      assert.equal(new Set(turns.map((x) => x.speaker_id)).size, 2, JSON.stringify(turns));
      const score = diarizationError(truth, hypothesis(turns), samples.length);
      t.diagnostic(`DER ${(score.der * 100).toFixed(1)} % ${JSON.stringify(score)}`);
      assert.ok(score.der <= 0.1, `DER ${score.der}`);
    });

  test('streamed: turns arrive segment by segment as they are decided; DER <= 15 % with the count unknown', async (t) => {
    const { samples, truth } = await conversation(['rms', 'slt']);
    const form = new FormData();
    form.append('model', 'diar-stream');
    form.append('stream', 'true');
    form.append('file', new Blob([encodeWav({ samples, sampleRate: RATE, channels: 1 })]), 'talk.wav');
    const res = await request(s.url, 'POST', '/v1/audio/transcriptions', { body: form });
    assert.equal(res.status, 200, res.body.toString());
    const events = sseEvents(res.body);
    assert.equal(events.at(-1), '[DONE]');
    const parsed = events.slice(0, -1) as { type: string; speaker_turns: Turn[] }[];
    const deltas = parsed.filter((e) => e.type === 'diarization.delta');
    const done = parsed.at(-1)!;
    assert.equal(done.type, 'diarization.done');
    assert.ok(
      deltas.length >= 5,
      `${deltas.length} deltas: turns are sent as segments close, not at the end`,
    );
    assert.deepEqual(
      deltas.flatMap((d) => d.speaker_turns),
      done.speaker_turns,
    );
    checkTurns(done.speaker_turns, samples.length);
    const score = diarizationError(truth, hypothesis(done.speaker_turns), samples.length);
    t.diagnostic(`streamed DER ${(score.der * 100).toFixed(1)} % ${JSON.stringify(score)}`);
    assert.ok(score.der <= 0.15, `DER ${score.der}`);
  });

  test('a turn change inside one speech segment (0.1 s pause) is still found', async (t) => {
    // Every other pause is too short for the VAD to split, so segments hold two turns each.
    const { samples, truth } = await conversation(
      ['slt', 'awb'],
      GAPS.map((gap, i) => (i % 2 === 0 ? 0.1 : gap)),
    );
    const res = await run(samples);
    assert.equal(res.status, 200, res.body.toString());
    const turns = res.json.speaker_turns as Turn[];
    checkTurns(turns, samples.length);
    const score = diarizationError(truth, hypothesis(turns), samples.length);
    t.diagnostic(`DER ${(score.der * 100).toFixed(1)} % ${JSON.stringify(score)}`);
    assert.ok(score.der <= 0.1, `DER ${score.der}`);
  });

  test('one voice is one speaker; num_speakers, when sent, is obeyed', async () => {
    for (const voice of ['awb', 'slt']) {
      const { samples } = await conversation([voice, voice]);
      const res = await transcribe(samples);
      assert.equal(res.status, 200, res.body.toString());
      const turns = res.json.speaker_turns as Turn[];
      assert.ok(turns.length >= 8, `${voice}: ${turns.length} turns`);
      assert.deepEqual(
        new Set(turns.map((x) => x.speaker_id)),
        new Set([0]),
        `${voice}: ${JSON.stringify(turns)}`,
      );
    }
    const { samples } = await conversation(['rms', 'slt']);
    const one = await run(samples, { options: { num_speakers: 1 } });
    assert.equal(one.status, 200, one.body.toString());
    assert.deepEqual(new Set((one.json.speaker_turns as Turn[]).map((x) => x.speaker_id)), new Set([0]));
    const three = await transcribe(samples, { options: JSON.stringify({ num_speakers: 3 }) });
    assert.equal(new Set((three.json.speaker_turns as Turn[]).map((x) => x.speaker_id)).size, 3);
    assert.match(
      errorOf(await run(samples, { options: { num_speakers: 0 } }), 400, 'invalid_request_error'),
      /num_speakers: "0" is invalid/,
    );
  });

  test('silence and a 1-sample file give no turns; a corrupt WAV is a clear 400', async () => {
    const silent = await transcribe(new Float32Array(3 * RATE));
    assert.equal(silent.status, 200, silent.body.toString());
    assert.equal(silent.json.text, '');
    assert.deepEqual(silent.json.speaker_turns, []);
    const one = await transcribe(new Float32Array([0.5]));
    assert.equal(one.status, 200, one.body.toString());
    assert.deepEqual(one.json.speaker_turns, []);
    const oneRun = await run(new Float32Array([0.5]));
    assert.deepEqual(oneRun.json.speaker_turns, []);

    const form = new FormData();
    form.append('model', 'diar');
    form.append('file', new Blob([Buffer.from('RIFF but not really a wav')]), 'bad.wav');
    const corrupt = await request(s.url, 'POST', '/v1/audio/transcriptions', { body: form });
    assert.match(errorOf(corrupt, 400, 'invalid_request_error'), /file: not a WAV file/);
    assert.match(
      errorOf(await post(s.url, '/v1/tasks/run', { model: 'diar' }), 400, 'invalid_request_error'),
      /audio/,
    );
  });

  test('the event loop stays free while two minutes of audio are diarized', async () => {
    const { samples } = await conversation(['rms', 'awb']);
    const long = concat([samples, samples, samples, samples]);
    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    const res = await transcribe(long);
    delay.disable();
    assert.equal(res.status, 200, res.body.toString());
    assert.equal(new Set((res.json.speaker_turns as Turn[]).map((x) => x.speaker_id)).size, 2);
    const worstMs = delay.max / 1e6;
    const wallMs = res.json.timing.wall_ms as number;
    // Work on the loop would stall it for about the whole wall time.
    assert.ok(worstMs < Math.max(50, wallMs / 2), `loop stalled ${worstMs} ms during ${wallMs} ms of work`);
  });
});
