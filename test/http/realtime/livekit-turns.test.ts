/**
 * Server-VAD turns never share audio, as real clients drive them (issue 39, item 5): LiveKit
 * Agents' realtime STT (plugin 1.9.0 unmodified, its defaults: prefix 600 ms, silence 350 ms) and a
 * raw socket with the openai SDK's session.update and OpenAI's defaults (300/500), over LibriVox
 * 0880 (its pause after "he was not" split it into "he was not" / "not an ill..." before the fix) and
 * flite sentences 650 ms apart (a pause longer than either silence window, shorter than window plus
 * prefix). Audio goes at real time: sent faster, voxd's VAD examines it in longer windows and finds
 * other turns (docs/performance.md, "Server-VAD turns (issue 39)"). Each turn must start no earlier
 * than the previous one's audio ended (its speech_stopped plus the silence window), and no turn
 * may begin with the word the previous one ended with. The 20-run measurement is
 * scripts/bench-vad-turns.mjs; test/http/realtime/server-vad.test.ts checks the same bound with
 * the fixture ASR counting each turn's samples.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  type Clip,
  fliteSentences,
  LIVEKIT_DEFAULTS,
  libri0880,
  liveKitTurns,
  OPENAI_DEFAULTS,
  overlapsOf,
  rawTurns,
  repeatsOf,
  startTap,
  type Turn,
} from '../../helpers/realtime-turns.js';
import { suiteServer } from '../../helpers/suite-server.js';

const SENTENCES = [
  'Please call me tomorrow morning.',
  'The weather is nice today.',
  'Turn on the kitchen lights.',
];

describe('server-VAD turns through LiveKit and a raw realtime client', () => {
  const s = suiteServer({
    busy_timeout_ms: 0,
    models: [
      { id: 'flite', family: 'flite_tts', task: 'tts', lazy: true },
      { id: 'pocketsphinx', family: 'pocketsphinx_asr', task: 'asr', mode: 'streaming', lazy: true },
      { id: 'silero-vad', family: 'silero_vad', task: 'vad', lazy: true },
    ],
  });

  function check(what: string, turns: Turn[], silenceMs: number) {
    const shown = turns.map((t) => `[${t.start}-${t.end}] "${t.transcript}"`).join(' ');
    assert.ok(turns.length > 0, `${what}: no turn`);
    assert.deepEqual(overlapsOf(turns, silenceMs), [], `${what}: ${shown}`);
    assert.deepEqual(repeatsOf(turns), [], `${what}: ${shown}`);
  }

  async function sentences(): Promise<Clip> {
    return fliteSentences(s.url, SENTENCES, 650);
  }

  test("LiveKit's realtime STT with its defaults (600/350)", async (t) => {
    for (const clip of [libri0880(), await sentences()]) {
      const tap = await startTap(s.url);
      try {
        const turns = await liveKitTurns(tap, clip, true);
        t.diagnostic(
          `${clip.name}: ${turns.map((x) => `[${x.start}-${x.end}] "${x.transcript}"`).join(' ')}`,
        );
        check(`LiveKit, ${clip.name}`, turns, LIVEKIT_DEFAULTS.silence);
        if (clip.name.startsWith('flite'))
          assert.equal(
            turns.length,
            SENTENCES.length,
            'a 650 ms pause ends a turn whose silence window is 350 ms',
          );
      } finally {
        await tap.close();
      }
    }
  });

  test("a raw client with OpenAI's defaults (300/500)", async (t) => {
    for (const clip of [libri0880(), await sentences()]) {
      const turns = await rawTurns(s.url, clip, true);
      t.diagnostic(`${clip.name}: ${turns.map((x) => `[${x.start}-${x.end}] "${x.transcript}"`).join(' ')}`);
      check(`raw, ${clip.name}`, turns, OPENAI_DEFAULTS.silence);
      if (clip.name.startsWith('flite'))
        assert.equal(
          turns.length,
          SENTENCES.length,
          'a 650 ms pause ends a turn whose silence window is 500 ms',
        );
    }
  });
});
