/**
 * A JSON body's base64 audio left as the body's own bytes (issue 27). Parsed the usual way, 5 s of
 * base64 audio (213 KB) became a string twice on the main thread (the body's text, then the value
 * JSON.parse copies out of it), then bytes; 60 s, 2.5 MB of strings each time, most of the main
 * thread's time and garbage for such a request. Here the `audio_base64` string literal, when it is
 * large and plain (no escapes), is cut out of the body before it is parsed, a placeholder parsed in
 * its place, and its bytes kept beside the parsed body (takeLiftedField) for the audio worker to decode
 * (decodeBase64Literal). Only the body's `audio_base64` or its `request.audio_base64` is lifted:
 * the rest of the body is parsed as it was, and so is any body where the cut does not give that
 * field back.
 */
import { randomBytes } from 'node:crypto';
import { isPlainObject } from '../../config/errors.js';
import { ownsItsMemory } from '../../util/own-memory.js';

/** Literals shorter than this are parsed with the rest: cutting would save nothing. */
export const LIFT_MIN_BYTES = 64 * 1024;
const KEY = 'audio_base64';
const KEY_BYTES = Buffer.from(`"${KEY}"`);
/** A placeholder no client can guess, so none can make another field stand for the lifted bytes. */
const TOKEN = randomBytes(16).toString('hex');
let nextPlaceholder = 0;

/** A string literal's characters (without the quotes), as the body's bytes held them. */
export interface LiftedLiteral {
  bytes: Uint8Array;
  /**
   * The body's bytes lie in memory of their own (not in a socket read shared with the request's
   * headers, or with a pipelined request's bytes), so they may be moved to a thread, not copied:
   * the literal is then read once, by that thread.
   */
  movable: boolean;
}

const lifted = new WeakMap<object, Map<string, LiftedLiteral>>();

/**
 * `key`'s string literal when it was lifted out of `body`, handed out once: a movable literal is
 * moved to a thread by whoever takes it, after which its bytes are gone.
 */
export function takeLiftedField(body: object, key: string): LiftedLiteral | undefined {
  const fields = lifted.get(body);
  const literal = fields?.get(key);
  fields?.delete(key);
  return literal;
}

const holds =
  (placeholder: string) =>
  (value: unknown): value is Record<string, unknown> =>
    isPlainObject(value) && value[KEY] === placeholder;

const isSpace = (byte: number | undefined) =>
  byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d;

/** Where the literal that follows `"audio_base64":` opens and closes, when it is one to lift. */
function literalSpan(body: Buffer): { open: number; close: number } | undefined {
  const at = body.indexOf(KEY_BYTES);
  if (at < 0) return undefined;
  let p = at + KEY_BYTES.length;
  while (isSpace(body[p])) p++;
  if (body[p++] !== 0x3a) return undefined; // ':'
  while (isSpace(body[p])) p++;
  if (body[p] !== 0x22) return undefined; // a string opens
  const open = p;
  const close = body.indexOf(0x22, open + 1);
  if (close < 0 || close - open - 1 < LIFT_MIN_BYTES) return undefined;
  // An escape (\" or \u...) would make the literal's characters differ from its bytes.
  const backslash = body.indexOf(0x5c, open + 1);
  if (backslash >= 0 && backslash < close) return undefined;
  return { open, close };
}

/**
 * `parse` of the body's text, with a large `audio_base64` lifted out (see above). A body
 * that does not parse with the placeholder is parsed whole, so its error is the one it always had.
 */
export function parseLifting(body: Buffer, parse: (text: string) => unknown): unknown {
  const span = body.length >= LIFT_MIN_BYTES ? literalSpan(body) : undefined;
  if (span) {
    const placeholder = `voxd-lifted-${TOKEN}-${nextPlaceholder++}`;
    const text = `${body.toString('utf8', 0, span.open)}"${placeholder}"${body.toString('utf8', span.close + 1)}`;
    let parsed: unknown;
    try {
      parsed = parse(text);
    } catch {
      parsed = undefined;
    }
    // The field of the body, or of its `request` (the two forms of /v1/tasks/run).
    const holder = isPlainObject(parsed) ? [parsed, parsed['request']].find(holds(placeholder)) : undefined;
    if (holder) {
      const literal = {
        bytes: body.subarray(span.open + 1, span.close),
        movable: ownsItsMemory(body),
      };
      lifted.set(holder, new Map([[KEY, literal]]));
      return parsed;
    }
  }
  return parse(body.toString('utf8'));
}
