/**
 * Base64 audio payloads (`audio_base64`, `voice_ref.data`): the checks and the decoding, shared by
 * the main thread (a payload already parsed as a string) and the audio worker (one lifted from a
 * JSON body's bytes), so both give the same bytes and the same errors.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { invalidField } from '../errors.js';

/** Base64 characters decoded in one turn of the event loop (a multiple of 4): about a millisecond. */
const SLICE_CHARS = 256 * 1024;

const BASE64 = /^[A-Za-z0-9+/\s]*={0,2}\s*$/;
const PADDING = /=+$/;

/**
 * Whether `payload`, which Node decoded to `bytes`, is base64 (Node's decoder skips what is not
 * base64 instead of failing, and takes base64url's - and _ as well). Each character it skips costs
 * the output bytes, so a payload of n characters before its padding that decoded to 3n/4 bytes
 * (rounded down) skipped none, except when n is 4k+1: no base64 has that length, and one skipped
 * character would go unseen there. The pattern, which costs ten times more on a large payload,
 * decides only what that count cannot: line breaks, invalid payloads, that one length.
 */
export function isBase64Of(payload: string, bytes: Buffer): boolean {
  return skippedNone(payload, bytes) || BASE64.test(payload);
}

/** Whether Node's decoder took every character of `payload` but its padding (see isBase64Of). */
function skippedNone(payload: string, bytes: Buffer): boolean {
  const n = payload.length - (PADDING.exec(payload.slice(-2))?.[0].length ?? 0);
  return (
    n % 4 !== 1 &&
    bytes.length === Math.floor((n * 3) / 4) &&
    !payload.includes('-') &&
    !payload.includes('_')
  );
}

/**
 * Whether `payload` is strict base64, padded, with no whitespace (what the Realtime API's audio
 * events carry): its length a multiple of 4, which is never 4k+1 before its padding, so the count
 * alone decides, and no pattern runs over the payload.
 */
export function isPaddedBase64Of(payload: string, bytes: Buffer): boolean {
  return payload.length % 4 === 0 && skippedNone(payload, bytes);
}

/** The bytes of base64 `data` (optionally a `data:` URI), at most `maxBytes`; a 400 naming `field` otherwise. */
export function base64Bytes(data: string, field: string, maxBytes: number): Buffer {
  const payload = data.startsWith('data:') ? data.slice(data.indexOf(',') + 1) : data;
  if (payload.trim().length === 0) throw invalidField(field, `${field}: the base64 payload is empty`);
  // Three bytes for every four characters: refuse before allocating.
  if (Math.floor((payload.length * 3) / 4) > maxBytes + 3)
    throw invalidField(field, `${field}: decoded audio is larger than the limit of ${maxBytes} bytes`);
  const bytes = Buffer.from(payload, 'base64');
  if (!isBase64Of(payload, bytes)) throw invalidField(field, `${field}: not valid base64`);
  if (bytes.length > maxBytes)
    throw invalidField(field, `${field}: decoded audio is ${bytes.length} bytes; the limit is ${maxBytes}`);
  return bytes;
}

/**
 * Strict padded base64 given as its ASCII bytes (a JSON literal kept as bytes: util/json-reader.ts)
 * decoded a slice at a time with the event loop turning in between, or undefined when it is not
 * base64: a 6 MiB payload is twenty short pieces of work rather than one of 30 ms. Each slice is
 * decoded straight into the one output buffer, so no join of fresh memory follows.
 */
export async function decodePaddedBase64(ascii: Uint8Array): Promise<Buffer | undefined> {
  if (ascii.length % 4 !== 0) return undefined;
  const text = Buffer.from(ascii.buffer, ascii.byteOffset, ascii.length);
  const out = Buffer.allocUnsafeSlow((text.length / 4) * 3);
  let written = 0;
  for (let at = 0; at < text.length; at += SLICE_CHARS) {
    if (at > 0) await nextTurn();
    const end = Math.min(text.length, at + SLICE_CHARS);
    // Latin-1 makes any byte past ASCII a character the decoder skips, which the count then sees.
    const slice = text.toString('latin1', at, end);
    const bytes = out.write(slice, written, 'base64');
    const padding = PADDING.exec(slice.slice(-2))?.[0].length ?? 0;
    // Padding may only end the whole payload; every other character must have been taken.
    if ((padding > 0 && end < text.length) || bytes !== ((slice.length - padding) * 3) >> 2) return undefined;
    if (slice.includes('-') || slice.includes('_')) return undefined;
    written += bytes;
  }
  return out.subarray(0, written);
}
