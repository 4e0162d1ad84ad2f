/**
 * The one reader of a client's JSON message of any size: an HTTP body, a realtime event, a bridge
 * frame. JSON.parse, a toString of the whole text, a base64 decode of a whole payload: each is one
 * piece of main-thread work as long as its input, 3-5 ms a MiB on a loaded 2-core machine, so a
 * 21 MiB event held every client of the server 260 ms, whatever it held (issue 38). Here:
 * - the text is scanned as bytes (UTF-8 puts no ASCII byte inside a multi-byte character), a slice
 *   at a time with the event loop turning in between: its depth and width are checked
 *   (json-text.ts's limits) before anything is parsed;
 * - every string literal of LIFT_MIN_BYTES or more is cut out and a placeholder parsed in its
 *   place, so JSON.parse only ever sees the rest, the skeleton, which may be at most
 *   MAX_SKELETON_BYTES;
 * - each cut literal then goes back: as its bytes for the keys the caller keeps (audio, which is
 *   decoded a slice at a time or on a worker, takeLifted), as a string decoded a slice at a time
 *   for the others.
 */
import { randomBytes } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { keyPath } from '../config/errors.js';
import { invalidAt, showValue } from '../errors.js';
import {
  BACKSLASH,
  CLOSE_ARRAY,
  CLOSE_OBJECT,
  COMMA,
  checkJsonShape,
  type DepthOptions,
  jsonShapeError,
  MAX_JSON_DEPTH,
  MAX_JSON_VALUES,
  OPEN_ARRAY,
  OPEN_OBJECT,
  type ParseOptions,
  parseJsonText,
  QUOTE,
} from './json-text.js';
import { ownsItsMemory } from './own-memory.js';

/** Bytes scanned or decoded in one turn of the event loop: about a millisecond of work. */
export const SLICE_BYTES = 256 * 1024;
/** Literals shorter than this are parsed with the rest: cutting would save nothing. */
export const LIFT_MIN_BYTES = 16 * 1024;
/**
 * The most JSON text outside long literals (numbers, short strings, whitespace, punctuation) a
 * message may have: JSON.parse of it is one piece of work, 10-20 ms at this size on 2 loaded cores.
 * 100,000 values (MAX_JSON_VALUES) of a few dozen bytes each fit.
 */
export const MAX_SKELETON_BYTES = 4 << 20;

/** A placeholder no client can guess, so none can make another field stand for lifted bytes. */
const TOKEN = `voxd-lifted-${randomBytes(16).toString('hex')}-`;
let nextPlaceholder = 0;

/** A string literal's characters (without its quotes), as the message's bytes held them. */
export interface LiftedLiteral {
  bytes: Uint8Array;
  /** The literal has escapes: its bytes are JSON text, not yet its characters. */
  escaped: boolean;
  /**
   * The message's bytes lie in memory of their own (not in a socket read shared with other
   * requests' bytes), so they may be moved to a thread rather than copied.
   */
  movable: boolean;
}

export interface ReadOptions extends DepthOptions, Pick<ParseOptions, 'notJson'> {
  /**
   * Whether a long literal stays bytes (takeLifted gives it): `key` is its member's key (an index
   * in an array), `top` the top-level key it lies under (undefined for a top-level member).
   * Others are decoded to strings.
   */
  keep?: (key: string, top: string | undefined, escaped: boolean) => boolean;
}

/** The keep rule of a reader that takes `key`'s literal as bytes, wherever it is, when it has no escapes. */
export const keepPlain =
  (key: string) =>
  (member: string, _top: string | undefined, escaped: boolean): boolean =>
    member === key && !escaped;

/**
 * The longest string a message may hold outside the keys its reader keeps as bytes. Every use of a
 * string costs its length again on the main thread (a schema's length check, a count of code
 * points, a regex): a 32 MiB `text` held the loop 700 ms after it was read. Text voxd speaks is
 * bounded by max_input_chars (100,000 by default, at most 400 KB of UTF-8); audio travels as bytes.
 */
export const MAX_TEXT_BYTES = 1 << 20;

function textTooLong(path: string, literal: LiftedLiteral) {
  return invalidAt(
    path === 'request body' ? undefined : path,
    `${path}: a string of ${literal.bytes.length} bytes; voxd takes at most ${MAX_TEXT_BYTES} bytes in a text field (audio goes as base64 in its own field, or as a file)`,
  );
}

/** The parsed message, and its kept literals by placeholder (for liftedJson). */
export interface ReadJson {
  value: unknown;
  literals: Map<string, LiftedLiteral>;
}

const kept = new WeakMap<object, Map<string, LiftedLiteral>>();

/**
 * `key`'s literal when it was kept as bytes in `holder`, handed out once: a movable literal is
 * moved to a thread by whoever takes it, after which its bytes are gone.
 */
export function takeLifted(holder: object, key: string): LiftedLiteral | undefined {
  const fields = kept.get(holder);
  const literal = fields?.get(key);
  fields?.delete(key);
  return literal;
}

/** One literal cut out of the text: where its quotes are. */
interface Cut {
  open: number;
  close: number;
  escaped: boolean;
}

/**
 * Reads `bytes` as JSON (see above). A fault of the client's (too deep, too wide, too much
 * skeleton, not JSON, a number out of range) is a 400 naming `options.field` and the path.
 */
export async function readJson(bytes: Buffer, options: ReadOptions = {}): Promise<ReadJson> {
  const literals = new Map<string, LiftedLiteral>();
  // A short message is parsed as it always was: one slice of work. One with a literal its reader
  // keeps as bytes (audio) is cut even so: a string of the whole text, and the literal's own
  // string from JSON.parse, cost far more than the cut on this project's machines (large strings
  // are made on fresh pages: docs/performance.md, "Short requests").
  if (bytes.length < LIFT_MIN_BYTES || (bytes.length <= SLICE_BYTES && !options.keep)) {
    const text = bytes.toString('utf8');
    checkJsonShape(text, options);
    return { value: parseJsonText(text, options.field, { ...options, shapeChecked: true }), literals };
  }
  const cuts = await scan(bytes, options);
  const parts: string[] = [];
  const placed = new Map<string, Cut>();
  let from = 0;
  for (const cut of cuts) {
    const placeholder = `${TOKEN}${nextPlaceholder++}`;
    placed.set(placeholder, cut);
    parts.push(bytes.toString('utf8', from, cut.open), `"${placeholder}"`);
    from = cut.close + 1;
  }
  parts.push(bytes.toString('utf8', from));
  // The shape was checked on the whole text: the skeleton's is the same.
  const value = parseJsonText(parts.join(''), options.field, { ...options, shapeChecked: true });
  if (placed.size === 0) return { value, literals };
  const movable = ownsItsMemory(bytes);
  const keep = options.keep ?? (() => false);
  if (typeof value === 'string') {
    const cut = placed.get(value);
    if (!cut) return { value, literals };
    const literal = literalOf(bytes, cut, movable);
    if (literal.bytes.length > MAX_TEXT_BYTES) throw textTooLong(options.field ?? 'request body', literal);
    return { value: await literalText(literal), literals };
  }
  // Every holder of a placeholder, found by one walk (the skeleton has at most MAX_JSON_VALUES values).
  interface Holder {
    holder: Record<string, unknown>;
    top: string | undefined;
    path: string;
  }
  const stack: Holder[] =
    typeof value === 'object' && value !== null
      ? [{ holder: value as Record<string, unknown>, top: undefined, path: options.field ?? '' }]
      : [];
  while (stack.length > 0) {
    const { holder, top, path } = stack.pop()!;
    const array = Array.isArray(holder);
    for (const key of Object.keys(holder)) {
      const member = holder[key];
      const under = top ?? (holder === value ? key : undefined);
      const at = () => keyPath(path, array ? Number(key) : key);
      if (typeof member === 'object' && member !== null)
        stack.push({ holder: member as Record<string, unknown>, top: under, path: at() });
      const cut = typeof member === 'string' ? placed.get(member) : undefined;
      if (!cut) continue;
      const literal = literalOf(bytes, cut, movable);
      if (keep(key, holder === value ? undefined : under, cut.escaped)) {
        literals.set(member as string, literal);
        const fields = kept.get(holder) ?? new Map<string, LiftedLiteral>();
        kept.set(holder, fields);
        fields.set(key, literal);
      } else if (literal.bytes.length > MAX_TEXT_BYTES) throw textTooLong(at(), literal);
      else holder[key] = await literalText(literal);
    }
  }
  return { value, literals };
}

/**
 * The depth and width check of json-text.ts, on bytes, a slice at a time, and the literals to cut
 * (see readJson). Malformed text is left to JSON.parse, except a string that never closes, whose
 * rest could be megabytes: its error is said here.
 */
async function scan(bytes: Buffer, options: ReadOptions): Promise<Cut[]> {
  // The socket's receipt of a long message (joined, unmasked) was a turn's work of its own.
  if (bytes.length > SLICE_BYTES) await nextTurn();
  const limit = options.limit ?? MAX_JSON_DEPTH;
  const cuts: Cut[] = [];
  let depth = 0;
  let values = 0;
  let lifted = 0;
  let yieldAt = SLICE_BYTES;
  const length = bytes.length;
  for (let i = 0; i < length; i++) {
    if (i >= yieldAt) {
      if (i - lifted > MAX_SKELETON_BYTES) throw skeletonTooLarge(options.field);
      await nextTurn();
      yieldAt = i + SLICE_BYTES;
    }
    const c = bytes[i]!;
    if (c === QUOTE) {
      const end = await literalEnd(bytes, i);
      if (end.close < 0) {
        const reason = `the string that opens at byte ${i} never closes`;
        throw invalidAt(
          options.notJson ? undefined : options.field,
          options.notJson?.(reason) ??
            `${options.field === undefined ? 'request body is' : `${options.field}:`} not valid JSON: ${reason}`,
        );
      }
      if (end.close - i - 1 >= LIFT_MIN_BYTES) {
        if (isKey(bytes, end.close + 1)) throw keyTooLong(bytes, i, end.close, options.field);
        cuts.push({ open: i, close: end.close, escaped: end.escaped });
        lifted += end.close - i + 1;
      }
      i = end.close;
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > limit || ++values > MAX_JSON_VALUES) shapeFault(bytes, i, cuts, options);
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) depth--;
    else if (c === COMMA && ++values > MAX_JSON_VALUES) shapeFault(bytes, i, cuts, options);
  }
  if (length - lifted > MAX_SKELETON_BYTES) throw skeletonTooLarge(options.field);
  return cuts;
}

/**
 * The 400 for a text too deep or too wide at byte `at`: json-text.ts's message (which names the
 * path) for the text up to it, the literals cut so far standing as empty strings.
 */
function shapeFault(bytes: Buffer, at: number, cuts: readonly Cut[], options: ReadOptions): never {
  let prefix = '';
  let from = 0;
  for (const cut of cuts) {
    prefix += `${bytes.toString('utf8', from, cut.open)}""`;
    from = cut.close + 1;
  }
  prefix += bytes.toString('utf8', from, at + 1);
  throw (
    jsonShapeError(prefix, options) ??
    invalidAt(options.field, `${options.field ?? 'request body'}: JSON too deep or too wide`)
  );
}

/** Whether the next byte after `at` that is not a space is `:`: the literal before it is a key. */
function isKey(bytes: Buffer, at: number): boolean {
  let p = at;
  while (bytes[p] === 0x20 || bytes[p] === 0x09 || bytes[p] === 0x0a || bytes[p] === 0x0d) p++;
  return bytes[p] === 0x3a;
}

function keyTooLong(bytes: Buffer, open: number, close: number, field: string | undefined) {
  return invalidAt(
    field,
    `${field ?? 'request body'}: a key of ${close - open - 1} bytes (${showValue(bytes.toString('utf8', open + 1, open + 41))}); keys are names, of less than ${LIFT_MIN_BYTES} bytes`,
  );
}

function skeletonTooLarge(field: string | undefined) {
  return invalidAt(
    field,
    `${field ?? 'request body'}: more than ${MAX_SKELETON_BYTES} bytes of JSON outside strings of ${LIFT_MIN_BYTES} bytes or more (numbers, short strings, spaces); voxd accepts at most ${MAX_SKELETON_BYTES}`,
  );
}

/**
 * The closing quote of the literal opened at `open` (-1 when none), and whether it has escapes. A
 * quote is escaped when an odd number of backslashes stands before it; they lie after the previous
 * quote found, so each byte is looked at a bounded number of times, with the loop turning in long
 * runs.
 */
async function literalEnd(bytes: Buffer, open: number): Promise<{ close: number; escaped: boolean }> {
  const backslash = bytes.indexOf(BACKSLASH, open + 1);
  let at = open;
  let counted = 0;
  for (;;) {
    at = bytes.indexOf(QUOTE, at + 1);
    if (at < 0) return { close: -1, escaped: false };
    if (backslash < 0 || backslash > at) return { close: at, escaped: false };
    let slashes = 0;
    while (bytes[at - 1 - slashes] === BACKSLASH) {
      if (++slashes % SLICE_BYTES === 0) await nextTurn();
    }
    if (slashes % 2 === 0) return { close: at, escaped: true };
    counted += slashes;
    if (counted > SLICE_BYTES) {
      counted = 0;
      await nextTurn();
    }
  }
}

const literalOf = (bytes: Buffer, cut: Cut, movable: boolean): LiftedLiteral => ({
  bytes: bytes.subarray(cut.open + 1, cut.close),
  escaped: cut.escaped,
  movable,
});

/** A literal's characters, decoded a slice at a time. */
export async function literalText(literal: LiftedLiteral): Promise<string> {
  const { bytes: view, escaped } = literal;
  const bytes = Buffer.from(view.buffer, view.byteOffset, view.byteLength);
  let text = '';
  for (let at = 0; at < bytes.length; ) {
    if (at > 0) await nextTurn();
    const end = sliceEnd(bytes, at, bytes.length, escaped);
    const slice = bytes.toString('utf8', at, end);
    text += escaped ? (JSON.parse(`"${slice}"`) as string) : slice;
    at = end;
  }
  return text;
}

/**
 * Where the slice of a literal that starts at `from` ends (at most SLICE_BYTES on, at most `close`):
 * never inside a UTF-8 character, and for escaped text never inside an escape (`\"`, `\u00e9`).
 */
function sliceEnd(bytes: Buffer, from: number, close: number, escaped: boolean): number {
  const target = from + SLICE_BYTES;
  if (target >= close) return close;
  let end = target;
  if (escaped) {
    // Escapes are walked from the slice's start: each one's length is known from its second byte.
    for (let at = bytes.indexOf(BACKSLASH, from); at >= 0 && at < target; ) {
      const next = at + (bytes[at + 1] === 0x75 ? 6 : 2); // \uXXXX or \x
      if (next > target) {
        end = at;
        break;
      }
      at = bytes.indexOf(BACKSLASH, next);
    }
  }
  while (end > from && (bytes[end]! & 0xc0) === 0x80) end--;
  return end > from ? end : Math.min(close, target);
}

/**
 * `value` (from readJson, with literals kept) as JSON text again, in pieces, each kept literal's
 * bytes put back where its placeholder stands: the bridge hands a frame's `body_json` on this way
 * without a string of its audio made, nor one copy of the whole.
 */
export function liftedJson(value: unknown, literals: Map<string, LiftedLiteral>): Uint8Array[] {
  const text = JSON.stringify(value);
  if (literals.size === 0) return [Buffer.from(text)];
  const parts: Uint8Array[] = [];
  let from = 0;
  for (let at = text.indexOf(TOKEN); at >= 0; at = text.indexOf(TOKEN, at + 1)) {
    const close = text.indexOf('"', at);
    const literal = literals.get(text.slice(at, close));
    if (!literal) continue;
    parts.push(Buffer.from(text.slice(from, at)), literal.bytes);
    from = close;
  }
  parts.push(Buffer.from(text.slice(from)));
  return parts;
}

/** Whether `value` is a placeholder readJson left for a kept literal (the bridge's `body`). */
export function isPlaceholder(value: unknown): value is string {
  return typeof value === 'string' && value.startsWith(TOKEN);
}
