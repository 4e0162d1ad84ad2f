/**
 * The engine of one pocketsphinx session, in its runner process: its own decoder (about 170 MB,
 * its live search included) over the shared model files (ps-decoder.ts). Every utterance starts from the same state, so the
 * same audio gives the same words and times whatever the session transcribed before.
 */
import { engineData, serveJobs } from '../engine-port.js';
import type { JobFailure } from '../job-error.js';
import type { RunnerSamples } from '../runner-samples.js';
import type { Word } from '../types.js';
import { PsDecoder, type PsModelFiles } from './ps-decoder.js';
import { decoderPcm } from './ps-pcm.js';
import { segmentWords } from './ps-words.js';

export type PsSettings = PsModelFiles;

export type PsJob =
  | { id: number; kind: 'ping' }
  /** A whole utterance, searched at once. */
  | { id: number; kind: 'decode'; samples: RunnerSamples }
  /** Live input: open an utterance, feed it pieces as they arrive (emitting guesses), end it. */
  | { id: number; kind: 'begin' }
  | { id: number; kind: 'feed'; samples: RunnerSamples }
  | { id: number; kind: 'end' };

/** A job as the session sends it (the worker adds the id). */
export type PsCall = PsJob extends infer J ? (J extends { id: number } ? Omit<J, 'id'> : never) : never;

/** An event of a live utterance: the best hypothesis so far. */
export interface PsPartial {
  hypothesis: string;
}
/** A decode's or an utterance's end: its text and its words, timed in samples from its start. */
export type PsReply = { id: number; ok: true; text: string; words?: Word[] } | JobFailure;

const decoder = new PsDecoder(engineData<PsSettings>());

/** A quarter second at 16 kHz: how much audio a live utterance takes between guesses. */
const STEP = 4000;

let open = false;
let lastGuess = '';
/** Samples fed to the open utterance, which bound its words' times. */
let fed = 0;
/** The open utterance's samples short of a whole step, decoded with the next piece or at its end. */
let pending = new Int16Array(0);

/** Opens an utterance: `live`, fed in steps (its own search, PsDecoder.startFresh), else whole. */
function begin(live: boolean): void {
  if (open) decoder.endUtt();
  decoder.startFresh(live);
  open = true;
  lastGuess = '';
  fed = 0;
  pending = new Int16Array(0);
}

function step(pcm: Int16Array): void {
  decoder.feedPart(pcm);
  fed += pcm.length;
}

/**
 * Audio in quarter-second steps, emitting the best guess whenever it changes; each step waits for
 * room in the job's event window (a streamed answer whose client reads slowly pauses the decode).
 * The steps are whole ones whatever the pieces (a live client's chunks), so that the words depend
 * on the audio alone and not on how it was cut.
 */
async function feed(pcm: Int16Array, emit: (partial: PsPartial) => Promise<void>): Promise<void> {
  if (!open) throw new Error('pocketsphinx: audio fed outside an utterance');
  const audio = new Int16Array(pending.length + pcm.length);
  audio.set(pending);
  audio.set(pcm, pending.length);
  let at = 0;
  for (; at + STEP <= audio.length; at += STEP) {
    step(audio.subarray(at, at + STEP));
    const now = decoder.hypothesis();
    if (now !== lastGuess) {
      lastGuess = now;
      await emit({ hypothesis: now });
    }
  }
  pending = audio.slice(at);
}

function end(): { text: string; words: Word[] } {
  if (!open) return { text: '', words: [] };
  open = false;
  if (pending.length > 0) step(pending);
  pending = new Int16Array(0);
  decoder.endUtt();
  return { text: decoder.hypothesis(), words: segmentWords(decoder.segments(), fed) };
}

function decode(pcm: Int16Array) {
  if (pcm.length === 0) return { text: '', words: [] };
  begin(false);
  decoder.decodeWhole(pcm);
  fed = pcm.length;
  return end();
}

serveJobs(async (job: PsJob, emit) => {
  switch (job.kind) {
    case 'ping':
      return { text: '' };
    case 'decode':
      return decode(decoderPcm(job.samples));
    case 'begin':
      begin(true);
      return { text: '' };
    case 'feed':
      await feed(decoderPcm(job.samples), emit);
      return { text: '' };
    case 'end':
      return end();
  }
});
