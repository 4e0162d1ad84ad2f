/**
 * Issue 23: a pocketsphinx transcript does not depend on the requests before it. Real recordings
 * (LibriVox clips) as WAV, mp3 and Ogg Vorbis uploads, offline, streamed and live, over a real voxd
 * on loopback: A, then B, then A again gives A's first answers, in the serial runtime and at 2
 * slots in the parallel one (each wave of requests sent at once, so both sessions serve). Before the
 * fix, a streamed request switched its decoder to live normalisation for good and left its mean to
 * the next request, and the front end's noise estimate ran on from one request into the next.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  compressed,
  type Heard,
  heardLive,
  heardOffline,
  heardStreamed,
  librivoxWav,
} from '../../helpers/librivox.js';
import { type TestServer, withServer } from '../../helpers/voxd.js';

// A pair whose second request the old code answered differently offline and streamed.
const A = '0880';
const B = '0920';

const aWav = librivoxWav(A);
const bWav = librivoxWav(B);
const aMp3 = compressed(aWav, 'mp3');
const aOgg = compressed(aWav, 'ogg');
const bMp3 = compressed(bWav, 'mp3');

type Way = (s: TestServer) => Promise<Heard>;
const WAYS_OF_A: Record<string, Way> = {
  'A.wav offline': (s) => heardOffline(s.url, 'asr', aWav, 'a.wav'),
  'A.mp3 offline': (s) => heardOffline(s.url, 'asr', aMp3, 'a.mp3'),
  'A.ogg offline': (s) => heardOffline(s.url, 'asr', aOgg, 'a.ogg'),
  'A.wav streamed': (s) => heardStreamed(s.url, 'asr', aWav, 'a.wav'),
  'A.mp3 streamed': (s) => heardStreamed(s.url, 'asr', aMp3, 'a.mp3'),
  'A live': (s) => heardLive(s.url, 'asr', aWav),
};
const WAYS_OF_B: Way[] = [
  (s) => heardOffline(s.url, 'asr', bMp3, 'b.mp3'),
  (s) => heardLive(s.url, 'asr', bWav),
  (s) => heardStreamed(s.url, 'asr', bWav, 'b.wav'),
];

/** `width` copies of one request at once: each slot's session serves one when they overlap. */
const wave = (s: TestServer, width: number, way: Way) =>
  Promise.all(Array.from({ length: width }, () => way(s)));

const ROUNDS = [
  { name: 'serial runtime', parallel: false, width: 1, slots: undefined },
  { name: 'parallel runtime, 2 slots', parallel: true, width: 2, slots: 2 },
];

describe('pocketsphinx: a transcript does not depend on the requests before it', { timeout: 600_000 }, () => {
  for (const round of ROUNDS) {
    test(`A, B, A: the same text for A, offline, streamed and live, WAV and compressed (${round.name})`, async () => {
      const model = {
        id: 'asr',
        family: 'pocketsphinx_asr',
        task: 'asr',
        mode: 'streaming',
        ...(round.slots ? { slots: round.slots } : {}),
      };
      await withServer({ busy_timeout_ms: 0, models: [model] }, { parallel: round.parallel }, async (s) => {
        const first = new Map<string, Heard>();
        for (const [name, way] of Object.entries(WAYS_OF_A)) {
          const answers = await wave(s, round.width, way);
          for (const answer of answers)
            assert.deepEqual(answer, answers[0], `${name}: the first answers agree`);
          first.set(name, answers[0]!);
          assert.ok(answers[0]!.text.split(' ').length >= 5, `${name}: heard "${answers[0]!.text}"`);
        }
        // A streamed upload says what the plain one says; every stream's deltas join into its text.
        assert.equal(first.get('A.wav streamed')!.text, first.get('A.wav offline')!.text);
        for (const [name, heard] of first)
          if (heard.deltas !== undefined) assert.equal(heard.deltas, heard.text, `${name}: deltas and text`);
        for (const way of WAYS_OF_B) await wave(s, round.width, way);
        // A again, offline first: right after B's stream.
        for (const [name, way] of Object.entries(WAYS_OF_A)) {
          for (const answer of await wave(s, round.width, way))
            assert.deepEqual(answer, first.get(name), `${name} after B: another answer than before`);
        }
      });
    });
  }
});
