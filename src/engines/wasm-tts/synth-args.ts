/**
 * The command lines of flite and espeak-ng for one request, apart from the worker so a test can
 * check them against the engines run directly. Speed scales what each voice's author chose; at
 * speed 1 nothing is set, so voxd speaks exactly as the engine does on its own.
 */
import { breakLongWords } from './long-words.js';

/**
 * Each flite voice's own duration_stretch, as its author set it: `--setf duration_stretch` replaces
 * that value rather than scaling it, so speed scales this. Verified against flite itself
 * (test/engines/wasm-tts): setting exactly this value gives the same bytes as setting none.
 */
export const FLITE_DURATION_STRETCH: Readonly<Record<string, number>> = {
  kal16: 1.1,
  kal: 1.1,
  slt: 1,
  rms: 1,
  awb: 1,
};

/**
 * The command line for one flite run. At speed 1 the voice speaks as flite would on its own; at
 * any other speed its own stretch is divided by the speed.
 */
export function fliteArgs(text: string, voice: string, speed: number, out: string): string[] {
  const stretch =
    speed === 1 ? [] : ['--setf', `duration_stretch=${(FLITE_DURATION_STRETCH[voice] ?? 1) / speed}`];
  return ['flite', '-voice', voice, ...stretch, '-t', breakLongWords(text), '-o', out];
}

/** espeak-ng's own rate is 175 words a minute (`-s 175` gives the same bytes as no `-s`). */
export const ESPEAK_RATE = 175;

/** The command line for one espeak-ng run; at speed 1 no rate is given, so espeak-ng uses its own. */
export function espeakArgs(text: string, voice: string, speed: number, out: string): string[] {
  const rate = speed === 1 ? [] : ['-s', String(Math.round(ESPEAK_RATE * speed))];
  return ['-v', voice, ...rate, '-w', out, '--', text];
}
