/**
 * The one parser for JSON text a client sends: every JSON body, the multipart `options` field,
 * realtime events; the WebSocket bridge's frames and Wyoming's header lines and data blocks use its
 * depth check. JSON.parse accepts what the rest of voxd cannot take:
 * - nesting deeper than MAX_JSON_DEPTH would overflow the stack of any recursive code that touches
 *   it later (JSON.stringify, option flattening, error messages), and V8's JSON.parse itself spends
 *   about a microsecond per level on the main thread (probe 2026-12 F7: a 20 MB body of `[`, 8-10 s
 *   for every client). So the text is scanned for its depth once, linearly, before it is parsed;
 * - a number beyond a double (`1e400`) parses as Infinity, which has no JSON form to hand to an
 *   engine: one walk of the parsed value finds it.
 */
import { keyPath } from '../config/errors.js';
import { cutText, invalidAt, showValue, type VoxdError } from '../errors.js';

/** Deepest nesting of objects and arrays a client's JSON may have; the body itself is level 1. */
export const MAX_JSON_DEPTH = 64;

/**
 * Most values (members of arrays and objects, counted by their separators and openings) a client's
 * JSON may have. Width costs V8 too: 1M one-element arrays (4 MB) took 350 ms to parse, 100k about
 * 20 ms. No voxd request needs more (audio travels as one base64 string, a batch of 10k requests of
 * 10 fields fits), so past it the text is refused before it is parsed.
 */
export const MAX_JSON_VALUES = 100_000;

/** The characters a shape scan looks for, as char codes (and as bytes: all ASCII). */
export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const OPEN_ARRAY = 0x5b;
export const CLOSE_ARRAY = 0x5d;
export const OPEN_OBJECT = 0x7b;
export const CLOSE_OBJECT = 0x7d;
export const COMMA = 0x2c;

export interface DepthOptions {
  /** What the text is, for messages, as parseJsonText's `field`: undefined for a request body. */
  field?: string | undefined;
  /** The deepest level allowed; MAX_JSON_DEPTH unless the text wraps a body (a bridge frame). */
  limit?: number;
}

/**
 * Why `text` is refused for its shape (nesting deeper than the limit, or more than MAX_JSON_VALUES
 * values), or undefined. Linear in the text and never parses it: string literals are skipped with
 * indexOf, so a 30 MB base64 string costs one search. Malformed text is left to JSON.parse: before
 * its first error the text is a valid prefix, whose shape this counts exactly, so JSON.parse never
 * goes deeper or wider than the limits either.
 */
export function jsonShapeFault(text: string, options: DepthOptions = {}): string | undefined {
  return shapeFaultOf(text, options)?.message;
}

/** The fault and the field path it names ('' for the text as a whole). */
function shapeFaultOf(text: string, options: DepthOptions): { path: string; message: string } | undefined {
  const limit = options.limit ?? MAX_JSON_DEPTH;
  const at = faultAt(text, limit);
  if (at === undefined) return undefined;
  const what = options.field ?? 'request body';
  if (at.wide)
    return {
      path: options.field ?? '',
      message: `${what}: JSON has more than ${MAX_JSON_VALUES} values; voxd accepts at most ${MAX_JSON_VALUES}`,
    };
  const path = pathTo(text, at.index, options.field);
  return {
    path,
    message: `${path || what}: JSON nesting is deeper than ${limit} levels; voxd accepts at most ${limit}`,
  };
}

/** The 400 of jsonShapeFault, naming the field it is about, or undefined when the shape is fine. */
export function jsonShapeError(text: string, options: DepthOptions = {}): VoxdError | undefined {
  const fault = shapeFaultOf(text, options);
  return fault && invalidAt(fault.path, fault.message);
}

/** Fails with a 400 (jsonShapeFault's message) when `text` is too deep or too wide. */
export function checkJsonShape(text: string, options: DepthOptions = {}): void {
  const error = jsonShapeError(text, options);
  if (error !== undefined) throw error;
}

/** Where the `[` or `{` that opens level `limit + 1` is, or that the text has too many values. */
function faultAt(text: string, limit: number): { index: number; wide: boolean } | undefined {
  let depth = 0;
  let values = 0;
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      i = stringEnd(text, i);
      if (i < 0) return undefined;
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > limit) return { index: i, wide: false };
      if (++values > MAX_JSON_VALUES) return { index: i, wide: true };
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) depth--;
    else if (c === COMMA && ++values > MAX_JSON_VALUES) return { index: i, wide: true };
  }
  return undefined;
}

/**
 * The closing quote of the string literal opened at `open`, or -1 when none closes it. A quote is
 * escaped when an odd number of backslashes stands before it; those backslashes lie after the
 * previous quote found, so every character is looked at a bounded number of times. A literal full
 * of escaped quotes is read a character at a time instead: a search per quote costs more.
 */
function stringEnd(text: string, open: number): number {
  let at = open;
  for (let escaped = 0; escaped < 16; escaped++) {
    at = text.indexOf('"', at + 1);
    if (at < 0) return -1;
    let slashes = 0;
    while (text.charCodeAt(at - 1 - slashes) === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return at;
  }
  for (let i = at + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === BACKSLASH) i++;
    else if (c === QUOTE) return i;
  }
  return -1;
}

/** One open object or array on the way to the refused opening. */
interface Level {
  array: boolean;
  /** The member being read: its index, or for an object its key literal's span (open quote, close quote). */
  index: number;
  keyOpen: number;
  keyClose: number;
  /** An object expects its next string to be a key (after `{` or `,`). */
  wantKey: boolean;
}

/**
 * The path of the member that opens at `target` (`options.x[0][0]...`, cut to 200 characters), by a
 * second scan that only runs once the text is refused: keys are read from their literals.
 */
function pathTo(text: string, target: number, field: string | undefined): string {
  const levels: Level[] = [];
  for (let i = 0; i < target; i++) {
    const c = text.charCodeAt(i);
    const top = levels[levels.length - 1];
    if (c === QUOTE) {
      const close = stringEnd(text, i);
      if (close < 0) break;
      if (top && !top.array && top.wantKey) {
        top.keyOpen = i;
        top.keyClose = close;
        top.wantKey = false;
      }
      i = close;
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      levels.push({ array: c === OPEN_ARRAY, index: 0, keyOpen: -1, keyClose: -1, wantKey: true });
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) levels.pop();
    else if (c === COMMA && top) {
      top.index++;
      top.wantKey = true;
    }
  }
  let path = field ?? '';
  for (const level of levels) {
    path = keyPath(path, level.array ? level.index : keyOf(text, level.keyOpen, level.keyClose));
    // The start names the field; past the cut the segments are only read to be thrown away.
    if (path.length > 200) break;
  }
  return cutText(path, 200);
}

/** A key literal's value, from at most its first 200 characters (a key can be megabytes long). */
function keyOf(text: string, open: number, close: number): string {
  if (open < 0) return '';
  let literal = text.slice(open, Math.min(close, open + 201));
  // A cut must not end inside an escape (`\u00e9`), which would not parse.
  const backslash = literal.lastIndexOf('\\');
  if (close > open + 201 && backslash > literal.length - 6) literal = literal.slice(0, backslash);
  try {
    return JSON.parse(`${literal}"`) as string;
  } catch {
    return literal.slice(1);
  }
}

export interface ParseOptions {
  /** The text's depth and width were checked already (json-reader.ts, on the bytes it came from). */
  shapeChecked?: boolean;
  /** The message for text that is not JSON, from the reason (a bridge frame words its own). */
  notJson?: (reason: string) => string;
}

/**
 * Parses client JSON text. `field` names what the text is, for messages: undefined for a request
 * body (paths are then its field names, `seed`, `request.options.x`), or a field such as `options`
 * (paths start with it). Fails with a 400 naming the path at fault.
 */
export function parseJsonText(text: string, field?: string, options: ParseOptions = {}): unknown {
  if (!options.shapeChecked) checkJsonShape(text, { field });
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    const reason = (err as Error).message;
    throw invalidAt(
      options.notJson ? undefined : field,
      options.notJson?.(reason) ??
        (field === undefined
          ? `request body is not valid JSON: ${reason}`
          : `${field}: ${showValue(text)} is not valid JSON (${reason})`),
    );
  }
  checkNumbers(parsed, field);
  return parsed;
}

/** An object or array met by the walk, with what is needed to name its path on failure. */
interface Frame {
  value: object;
  parent: Frame | undefined;
  key: string | number | undefined;
}

/**
 * The walk for numbers out of range: an explicit stack, no recursion (the depth is bounded by the
 * scan before the parse, but a wide value would make a deep recursion no cheaper).
 */
function checkNumbers(root: unknown, field: string | undefined): void {
  const label = field ?? 'request body';
  if (typeof root === 'number' && !Number.isFinite(root)) throw outOfRange(label, root);
  if (typeof root !== 'object' || root === null) return;
  const stack: Frame[] = [{ value: root, parent: undefined, key: undefined }];
  while (stack.length > 0) {
    const frame = stack.pop()!;
    // Indexes and keys rather than entries(): no [key, value] pair is made per member.
    const value = frame.value;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) visitMember(stack, frame, field, i, value[i]);
    } else {
      const keys = Object.keys(value);
      for (let i = 0; i < keys.length; i++) {
        const key = keys[i]!;
        visitMember(stack, frame, field, key, (value as Record<string, unknown>)[key]);
      }
    }
  }
}

/** One member of an object or array: a number is checked, an object or array is walked later. */
function visitMember(
  stack: Frame[],
  frame: Frame,
  field: string | undefined,
  key: string | number,
  value: unknown,
): void {
  if (typeof value === 'number' && !Number.isFinite(value))
    throw outOfRange(pathOf(frame, field, key), value);
  if (typeof value === 'object' && value !== null) stack.push({ value, parent: frame, key });
}

function outOfRange(path: string, value: number) {
  return invalidAt(
    path === 'request body' ? undefined : path,
    `${path}: number out of range (it parses as ${value}); expected a finite number, at most about 1.8e308`,
  );
}

/** `request.options.x` (then `last`); only built on failure, so the walk keeps no string per value. */
function pathOf(frame: Frame, field: string | undefined, last?: string | number): string {
  const keys: (string | number)[] = last === undefined ? [] : [last];
  for (let f: Frame | undefined = frame; f?.key !== undefined; f = f.parent) keys.push(f.key);
  let path = field ?? '';
  for (const key of keys.reverse()) path = keyPath(path, key);
  return cutText(path, 200);
}
