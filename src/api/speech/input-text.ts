/** The max_input_chars limit on the text a speech model is asked to speak, the same on every route. */
import type { ModelConfig, ServerConfig, TaskToken } from '../../config/types.js';
import { invalidField } from '../../errors.js';

/** Tasks whose text is spoken: the text is what a request's cost grows with. */
export const SPEECH_TASKS: readonly TaskToken[] = ['tts', 'clon', 'vdes'];

/**
 * Fails with a 400 naming `field` when `text` is longer than the model's max_input_chars (or the
 * server's, when the model sets none). Only speech models are limited; 0 is no limit. Characters
 * are code points, so an emoji counts once; they are counted only when the UTF-16 length is over
 * the limit, since the code point count is never larger.
 */
export function checkInputChars(
  text: string | undefined,
  field: string,
  model: ModelConfig,
  server: Pick<ServerConfig, 'max_input_chars'>,
): void {
  if (text === undefined || !SPEECH_TASKS.includes(model.task)) return;
  const own = model.max_input_chars !== undefined;
  const limit = model.max_input_chars ?? server.max_input_chars;
  if (limit === 0 || text.length <= limit) return;
  const chars = codePoints(text);
  if (chars <= limit) return;
  const raise = own
    ? "raise max_input_chars in this model's entry"
    : 'raise the server max_input_chars (--max-input-chars), or set max_input_chars on the model';
  throw invalidField(
    field,
    `${field}: ${chars} characters is over max_input_chars=${limit}; send a shorter text, or ${raise} (0 = no limit)`,
  );
}

/** Code points of `text`: each surrogate pair is one character. */
export function codePoints(text: string): number {
  let count = text.length;
  for (let i = 0; i < text.length - 1; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        count--;
        i++;
      }
    }
  }
  return count;
}

/**
 * OpenAI's usage of a speech request (`speech.audio.done`). voxd's engines have no tokens, so it
 * counts what voxd measures: the input's characters, as max_input_chars counts them, in
 * `input_tokens`; the audio counts nothing (its length is in the audio itself).
 */
export function speechUsage(text: string | undefined) {
  const input = text === undefined ? 0 : codePoints(text);
  return { input_tokens: input, output_tokens: 0, total_tokens: input };
}
