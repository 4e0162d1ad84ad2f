/**
 * Text to speech one sentence at a time: each sentence's audio is emitted as soon as it is made
 * (a streamed response starts with the first sentence, not after the whole text), and the result
 * is their concatenation, so streamed and offline answers are the same samples.
 */
import type { Audio } from '../audio/types.js';
import { invalidRequest } from '../errors.js';
import { sentences } from './engine-options.js';
import type { EngineEvent } from './types.js';

/**
 * `synth` makes one sentence's audio, or null when the engine found nothing to say in it (such a
 * sentence is skipped); when no sentence gives audio the request is a 400 with `nothing()`.
 */
export async function speakSentences(
  text: string,
  synth: (sentence: string) => Promise<Audio | null>,
  onEvent: ((event: EngineEvent) => void) | undefined,
  nothing: () => string,
): Promise<Audio> {
  const parts: Audio[] = [];
  for (const sentence of sentences(text)) {
    const audio = await synth(sentence);
    if (!audio || audio.samples.length === 0) continue;
    if (
      parts.length > 0 &&
      (audio.sampleRate !== parts[0]!.sampleRate || audio.channels !== parts[0]!.channels)
    )
      throw new Error('the engine changed its sample rate or channel count between sentences');
    parts.push(audio);
    // The sentence's text first, then its audio: a client can show what it is about to hear.
    onEvent?.({ type: 'text', delta: parts.length === 1 ? sentence : ` ${sentence}` });
    onEvent?.({ type: 'audio', audio });
  }
  if (parts.length === 0) throw invalidRequest(nothing());
  if (parts.length === 1) return parts[0]!;
  const samples = new Float32Array(parts.reduce((n, p) => n + p.samples.length, 0));
  let at = 0;
  for (const part of parts) {
    samples.set(part.samples, at);
    at += part.samples.length;
  }
  return { samples, sampleRate: parts[0]!.sampleRate, channels: parts[0]!.channels };
}
