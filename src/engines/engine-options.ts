/**
 * Reading engine options and inputs that several families share. Option maps hold strings; every
 * bad value is a 400 naming where it came from (`options.` for a request, `load_options.` for a model).
 */
import { invalidField, showValue } from '../errors.js';
import type { EngineRequest } from './types.js';

export interface NumberRule {
  where: 'options.' | 'load_options.';
  min: number;
  max: number;
  integer?: boolean;
}

/** A numeric option, or undefined when absent. */
export function numberOption(
  options: Record<string, string>,
  key: string,
  rule: NumberRule,
): number | undefined {
  const raw = options[key];
  if (raw === undefined) return undefined;
  const value = Number(raw);
  const { where, min, max, integer = false } = rule;
  if (
    raw.trim() === '' ||
    !Number.isFinite(value) ||
    value < min ||
    value > max ||
    (integer && !Number.isInteger(value))
  ) {
    throw invalidField(
      `${where}${key}`,
      `${where}${key}: ${showValue(raw)} is invalid; expected ${integer ? 'an integer' : 'a number'} between ${min} and ${max}`,
    );
  }
  return value;
}

/** The speaking rate of a TTS request (`speed`, or its alias `speaking_rate`), 1 when absent. */
export function speedOption(options: Record<string, string>): number {
  const key = options['speed'] !== undefined ? 'speed' : 'speaking_rate';
  const raw = options[key];
  if (raw === undefined) return 1;
  const speed = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(speed) || speed < 0.25 || speed > 4) {
    throw invalidField(key, `${key}: ${showValue(raw)} is invalid; expected a number between 0.25 and 4`);
  }
  return speed;
}

const SPEAKABLE = /[\p{L}\p{N}]/u;

/** The text of a TTS request; a 400 when it has nothing a synthesizer could say. */
export function speakableText(request: EngineRequest): string {
  const text = request.text ?? '';
  if (!SPEAKABLE.test(text)) throw invalidField('input', 'input: the text has no letters or digits to speak');
  return text;
}

/**
 * The text cut into sentences (after . ! ? … and a space, after 。！？, or at a line break), each with
 * something to say; a piece with nothing speakable joins the one before. TTS sessions synthesise
 * one sentence at a time, streamed or not, so a streamed answer is byte for byte the offline one.
 */
export function sentences(text: string): string[] {
  const out: string[] = [];
  for (const piece of text.split(/(?<=[.!?…])\s+|(?<=[。！？])\s*|\n+/u)) {
    const trimmed = piece.trim();
    if (!trimmed) continue;
    if (SPEAKABLE.test(trimmed) || out.length === 0) out.push(trimmed);
    else out[out.length - 1] += ` ${trimmed}`;
  }
  return out;
}
