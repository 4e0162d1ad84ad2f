/** Small helpers for audio samples that tests build from synthesised speech, and test tones. */

import { joinSamples } from '../../src/audio/join-samples.js';
import { encodeWav } from '../../src/audio/wav-encode.js';

/** First and last sample above a small amplitude: where the synthesised speech really is. */
export function speechBounds(samples: Float32Array): [number, number] {
  let first = 0;
  let last = samples.length - 1;
  while (first < samples.length && Math.abs(samples[first]!) < 0.01) first++;
  while (last > first && Math.abs(samples[last]!) < 0.01) last--;
  return [first, last + 1];
}

/** The parts one after another, in one new array: the server's own join. */
export const concat = joinSamples;

/** A two-voice conversation's turns, spoken by flite in the diarization tests. None of these sentences was used to tune the window, threshold or frame selection. */
export const SENTENCES = [
  'The library opens at eight on weekdays and closes at six.',
  'Did you remember to water the plants on the balcony?',
  'Our flight was delayed by almost two hours last night.',
  'I think the red jacket suits you better than the grey one.',
  'The bakery on the corner sells the best bread in town.',
  'We could take the bus instead of walking in the rain.',
  'He has been learning to play the piano since March.',
  'Remember to switch off the lights before you go to bed.',
  'The new bridge will be finished at the end of the summer.',
  'Let us meet in front of the cinema at half past seven.',
];
/** Pauses between turns, 0.3-0.7 s. */
export const GAPS = [0.45, 0.6, 0.3, 0.7, 0.5, 0.35, 0.65, 0.4, 0.55, 0.5];

/** `samples` as a WAV file, 16 kHz mono unless said otherwise. */
export const wavOf = (samples: Float32Array, sampleRate = 16000, channels = 1): Buffer =>
  encodeWav({ samples, sampleRate, channels });

/** One second of a tone as WAV: loud enough that the fake ASR models hear "hello world" in it. */
export const toneWav = (rate = 16000, channels = 1, amplitude = 0.3): Buffer =>
  wavOf(
    Float32Array.from({ length: rate * channels }, (_, i) => amplitude * Math.sin(i / 7)),
    rate,
    channels,
  );

/** One second of silence at 16 kHz mono, as WAV. */
export const silenceWav = (): Buffer => wavOf(new Float32Array(16000));

/** ITU-T G.711 µ-law of one 16-bit sample (the encoder a telephone gateway runs). */
export function muLaw(sample: number): number {
  const sign = sample < 0 ? 0x80 : 0;
  const magnitude = Math.min(Math.abs(sample), 32635) + 0x84;
  let exponent = 7;
  for (let mask = 0x4000; (magnitude & mask) === 0 && exponent > 0; mask >>= 1) exponent--;
  return ~(sign | (exponent << 4) | ((magnitude >> (exponent + 3)) & 0x0f)) & 0xff;
}
