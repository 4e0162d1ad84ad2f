/**
 * LiveKit Agents' Deepgram STT (`@livekit/agents-plugin-deepgram` 1.9.0, unmodified, its defaults:
 * interim results, `endpointing=25`, `vad_events`, KeepAlive every 5 s, its energy filter that
 * stops sending a second after speech) pointed at voxd by `baseUrl` alone (issue 41): `stream()`
 * fed two LibriVox clips at real time in 10 ms frames, as a room's microphone is, yields interim
 * and final transcripts and an END_OF_SPEECH after each utterance's final.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { initializeLogger, stt as sttlib } from '@livekit/agents';
import * as deepgram from '@livekit/agents-plugin-deepgram';
import { AudioFrame } from '@livekit/rtc-node';
import { paced, RATE, spoken } from '../../helpers/deepgram-listen.js';
import { engineSuiteServer } from '../../helpers/suite-server.js';
import { withDeadline } from '../../helpers/voxd.js';
import { wordErrorRate } from '../../helpers/wer.js';

initializeLogger({ pretty: false, level: 'warn' });

const { SpeechEventType } = sttlib;

describe("LiveKit's Deepgram STT against voxd", () => {
  const s = engineSuiteServer([
    { id: 'pocketsphinx', family: 'pocketsphinx_asr', task: 'asr', mode: 'streaming', lazy: true },
    { id: 'silero-vad', family: 'silero_vad', task: 'vad', lazy: true },
  ]);

  test('stream() yields interim and final transcripts and END_OF_SPEECH after each final', async (t) => {
    const clip = spoken(['0880', '0930'], { pauseMs: 2000 });
    const stt = new deepgram.STT({
      baseUrl: s.url.replace(/^http/, 'ws'),
      apiKey: 'unused',
      sampleRate: RATE,
    });
    const stream = stt.stream();
    const events: sttlib.SpeechEvent[] = [];
    const firstEnds = clip.speechEndsMs[0]! / 1000;
    let secondFinal = false;
    let lastEnded = (): void => undefined;
    const done = new Promise<void>((resolve) => {
      lastEnded = resolve;
    });
    const reading = (async () => {
      for await (const event of stream) {
        events.push(event);
        const start = event.alternatives?.[0]?.words?.[0]?.startTime ?? 0;
        if (event.type === SpeechEventType.FINAL_TRANSCRIPT && start > firstEnds) secondFinal = true;
        if (event.type === SpeechEventType.END_OF_SPEECH && secondFinal) lastEnded();
      }
    })();
    try {
      await paced(
        clip.pcm,
        (frame) => {
          const samples = new Int16Array(
            frame.buffer.slice(frame.byteOffset, frame.byteOffset + frame.length),
          );
          stream.pushFrame(new AudioFrame(samples, RATE, 1, samples.length));
        },
        { frameMs: 10 },
      );
      await withDeadline(done, "an END_OF_SPEECH after the second clip's final", 30_000);
    } finally {
      stream.endInput();
      stream.close();
      await stt.close();
      await reading.catch(() => undefined);
    }
    const shown = events.map((e) =>
      e.alternatives?.[0]
        ? `${SpeechEventType[e.type]}:"${e.alternatives[0].text}"`
        : SpeechEventType[e.type],
    );
    t.diagnostic(shown.join(' '));
    const finals = events.filter((e) => e.type === SpeechEventType.FINAL_TRANSCRIPT);
    assert.ok(
      events.some((e) => e.type === SpeechEventType.INTERIM_TRANSCRIPT),
      'interim transcripts during speech',
    );
    const heard = finals.map((e) => e.alternatives![0]!.text).join(' ');
    assert.ok(wordErrorRate(clip.reference, heard) <= 0.4, heard);
    // Each END_OF_SPEECH comes after a final and before the next utterance's first transcript.
    const kinds = events.map((e) => e.type);
    const ends = kinds.flatMap((k, i) => (k === SpeechEventType.END_OF_SPEECH ? [i] : []));
    assert.ok(ends.length >= 2, shown.join(' '));
    for (const at of ends)
      assert.equal(
        kinds
          .slice(0, at)
          .findLast((k) => k !== SpeechEventType.START_OF_SPEECH && k !== SpeechEventType.END_OF_SPEECH),
        SpeechEventType.FINAL_TRANSCRIPT,
        shown.join(' '),
      );
    // Word times are on the stream's timeline: the second clip's words come after the first's speech.
    const lastWords = finals.at(-1)!.alternatives![0]!.words ?? [];
    assert.ok((lastWords[0]?.startTime ?? 0) > firstEnds, JSON.stringify(lastWords[0]));
  });
});
