/**
 * The `id` of a frame answered without running it (backlog, byte budget, shutdown), read off its
 * bytes. Decoding and parsing a refused frame only to echo its id made three copies of it on the
 * main thread (its bytes, its text, its parsed strings): a client sending tens of MiB past the
 * budget had the server allocate several times that for nothing.
 *
 * The bytes are walked once, strings skipped, and only the value of a top-level `id` is parsed.
 * It answers as frameId does for a frame JSON.parse would read (the last `id` wins); a frame that
 * is not JSON may still have its id echoed, which costs nothing, since it is refused anyway.
 */
import { type FrameId, frameId } from './frames.js';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
/** A key longer than this is not `id`, however it is escaped. */
const MAX_KEY_BYTES = 32;

export function refusedFrameId(bytes: Buffer): FrameId {
  let id: unknown;
  let depth = 0;
  // At depth 1: whether the next string is a key, the key just read, and whether the byte that
  // comes next (past blanks) begins the value of a key `id`.
  let expectKey = false;
  let key: string | undefined;
  let idValue = false;
  // Only an object's keys are keys: a frame that is an array has no id.
  let object = false;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]!;
    if (idValue && !isBlank(byte)) {
      idValue = false;
      if (byte === QUOTE || isNumberStart(byte)) {
        const end = byte === QUOTE ? stringEnd(bytes, i) + 1 : numberEnd(bytes, i);
        id = parse(bytes, i, end);
        i = end - 1;
        continue;
      }
      // true, false, null, an object or an array: not an id, and the last `id` is the one read.
      id = null;
    }
    if (byte === QUOTE) {
      const end = stringEnd(bytes, i);
      if (depth === 1 && expectKey)
        key = end - i + 1 <= MAX_KEY_BYTES ? (parse(bytes, i, end + 1) as string | undefined) : undefined;
      expectKey = false;
      i = end;
    } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      depth++;
      if (depth === 1) object = byte === OPEN_BRACE;
      expectKey = depth === 1 && object;
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
      depth--;
    } else if (depth === 1 && object && byte === COMMA) {
      expectKey = true;
    } else if (depth === 1 && object && byte === COLON) {
      idValue = key === 'id';
      key = undefined;
    }
  }
  return id === undefined ? null : frameId({ id });
}

/** The index of the quote that closes the string opened at `start` (the last byte when unclosed). */
function stringEnd(bytes: Buffer, start: number): number {
  for (let i = start + 1; i < bytes.length; i++) {
    const byte = bytes[i]!;
    if (byte === BACKSLASH) i++;
    else if (byte === QUOTE) return i;
  }
  return bytes.length - 1;
}

/** The index past the number that begins at `start`. */
function numberEnd(bytes: Buffer, start: number): number {
  let i = start;
  while (i < bytes.length && isNumberByte(bytes[i]!)) i++;
  return i;
}

const isBlank = (byte: number) => byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d;
const isNumberStart = (byte: number) => byte === 0x2d || (byte >= 0x30 && byte <= 0x39);
const isNumberByte = (byte: number) =>
  isNumberStart(byte) || byte === 0x2b || byte === 0x2e || byte === 0x45 || byte === 0x65;

function parse(bytes: Buffer, start: number, end: number): unknown {
  try {
    return JSON.parse(bytes.toString('utf8', start, end));
  } catch {
    return undefined;
  }
}
