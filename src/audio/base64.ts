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
 * Characters made into one string at a time. A string this short is made in V8's young generation;
 * one of 256 KiB goes to its large-object space, fresh pages each time, and on this project's
 * machines decoding 260 KB of base64 cost 1 ms that way against 0.03 ms in these pieces
 * (docs/performance.md, "Short requests").
 */
const PIECE_CHARS = 32 * 1024;

/**
 * Decodes the strict base64 of `text` in [from, to) into `out` at `at`, a piece at a time: the bytes
 * written, or -1 when the characters are not strict base64 (padding only where the payload ends).
 */
function decodeRange(text: Buffer, from: number, to: number, out: Buffer, at: number): number {
  let written = 0;
  for (let piece = from; piece < to; piece += PIECE_CHARS) {
    const end = Math.min(to, piece + PIECE_CHARS);
    // Latin-1 makes any byte past ASCII a character the decoder skips, which the count then sees.
    const slice = text.toString('latin1', piece, end);
    const bytes = out.write(slice, at + written, 'base64');
    const padding = PADDING.exec(slice.slice(-2))?.[0].length ?? 0;
    if ((padding > 0 && end < text.length) || bytes !== ((slice.length - padding) * 3) >> 2) return -1;
    if (slice.includes('-') || slice.includes('_')) return -1;
    written += bytes;
  }
  return written;
}

/** The payload's characters and the buffer its bytes go in; undefined when its length rules it out. */
function paddedTarget(ascii: Uint8Array): { text: Buffer; out: Buffer } | undefined {
  if (ascii.length % 4 !== 0) return undefined;
  const text = Buffer.from(ascii.buffer, ascii.byteOffset, ascii.length);
  return { text, out: Buffer.allocUnsafeSlow((text.length / 4) * 3) };
}

/**
 * Strict padded base64 given as its ASCII bytes (a JSON literal kept as bytes: util/json-reader.ts)
 * decoded with the event loop turning after each SLICE_CHARS, or undefined when it is not base64: a
 * 6 MiB payload is twenty short pieces of work rather than one. Each piece is decoded straight into
 * the one output buffer, so no join of fresh memory follows.
 */
export async function decodePaddedBase64(ascii: Uint8Array): Promise<Buffer | undefined> {
  const target = paddedTarget(ascii);
  if (!target) return undefined;
  const { text, out } = target;
  let written = 0;
  for (let at = 0; at < text.length; at += SLICE_CHARS) {
    if (at > 0) await nextTurn();
    const bytes = decodeRange(text, at, Math.min(text.length, at + SLICE_CHARS), out, written);
    if (bytes < 0) return undefined;
    written += bytes;
  }
  return out.subarray(0, written);
}

/** decodePaddedBase64 in one piece of work: for payloads short enough (or on a worker thread). */
export function decodePaddedBase64Sync(ascii: Uint8Array): Buffer | undefined {
  const target = paddedTarget(ascii);
  if (!target) return undefined;
  const written = decodeRange(target.text, 0, target.text.length, target.out, 0);
  return written < 0 ? undefined : target.out.subarray(0, written);
}

const DATA_URI = Buffer.from('data:');

/**
 * base64Bytes of a payload given as its ASCII bytes: strict padded base64 is decoded a piece at a
 * time, with no string of the whole payload; anything else (line breaks, a `data:` URI, a payload
 * over the limit, one that is not base64) is decided by base64Bytes, which says what is wrong.
 */
export function base64BytesOf(ascii: Uint8Array, field: string, maxBytes: number): Buffer {
  const text = Buffer.from(ascii.buffer, ascii.byteOffset, ascii.length);
  if (text.length > 0 && Math.floor((text.length * 3) / 4) <= maxBytes + 3 && !startsWith(text, DATA_URI)) {
    const bytes = decodePaddedBase64Sync(text);
    if (bytes && bytes.length <= maxBytes) return bytes;
  }
  return base64Bytes(text.toString('latin1'), field, maxBytes);
}

const startsWith = (text: Buffer, prefix: Buffer): boolean =>
  text.length >= prefix.length && text.compare(prefix, 0, prefix.length, 0, prefix.length) === 0;
