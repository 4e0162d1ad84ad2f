/**
 * Text to speech one sentence at a time: each sentence's audio is emitted as soon as it is made
 * (a streamed response starts with the first sentence, not after the whole text), and the result
 * is their concatenation, so streamed and offline answers are the same samples. Each sentence waits
 * until the listener took the one before (backpressure: a slow client slows the synthesis); a
 * listener that needs only the events (`eventsOnly`) gets no concatenation, so a long answer is
 * never held whole.
 */
import { joinAudio } from '../audio/pcm16-audio.js';
import { type Audio, frameCount } from '../audio/types.js';
import { invalidField } from '../errors.js';
import { sentences } from './engine-options.js';
import type { EngineEvent } from './types.js';

type Synth = (sentence: string) => Promise<Audio | null>;
/** An engine's event listener: its promise (if any) resolves once the event was taken. */
type Listener = (event: EngineEvent) => unknown;

/**
 * `synth` makes one sentence's audio, or null when the engine found nothing to say in it (such a
 * sentence is skipped); when no sentence gives audio the request is a 400 with `nothing()`.
 */
export async function speakSentences(
  text: string,
  synth: Synth,
  onEvent: Listener | undefined,
  nothing: () => string,
): Promise<Audio>;
export async function speakSentences(
  text: string,
  synth: Synth,
  onEvent: Listener | undefined,
  nothing: () => string,
  eventsOnly: boolean | undefined,
): Promise<Audio | undefined>;
export async function speakSentences(
  text: string,
  synth: Synth,
  onEvent: Listener | undefined,
  nothing: () => string,
  eventsOnly = false,
): Promise<Audio | undefined> {
  const parts: Audio[] = [];
  let first: Audio | undefined;
  for (const sentence of sentences(text)) {
    const audio = await synth(sentence);
    if (!audio || frameCount(audio) === 0) continue;
    if (first && (audio.sampleRate !== first.sampleRate || audio.channels !== first.channels))
      throw new Error('the engine changed its sample rate or channel count between sentences');
    const delta = first ? ` ${sentence}` : sentence;
    first ??= audio;
    if (!(eventsOnly && onEvent)) parts.push(audio);
    // The sentence's text first, then its audio: a client can show what it is about to hear.
    await onEvent?.({ type: 'text', delta });
    await onEvent?.({ type: 'audio', audio });
  }
  if (!first) throw invalidField('input', nothing());
  return joinAudio(parts);
}
