/**
 * The one parser for JSON text a client sends: every JSON body and the multipart `options` field.
 * JSON.parse accepts what the rest of voxd cannot take, so one walk checks the parsed value first:
 * nesting deeper than MAX_JSON_DEPTH would overflow the stack of any recursive code that touches it
 * later (JSON.stringify, option flattening, error messages), and a number beyond a double
 * (`1e400`) parses as Infinity, which has no JSON form to hand to an engine.
 */
import { keyPath } from '../config/errors.js';
import { cutText, invalidRequest, showValue } from '../errors.js';

/** Deepest nesting of objects and arrays a client's JSON may have; the body itself is level 1. */
export const MAX_JSON_DEPTH = 64;

/** An object or array met by the walk, with what is needed to name its path on failure. */
interface Frame {
  value: object;
  depth: number;
  parent: Frame | undefined;
  key: string | number | undefined;
}

/**
 * Parses client JSON text. `field` names what the text is, for messages: undefined for a request
 * body (paths are then its field names, `seed`, `request.options.x`), or a field such as `options`
 * (paths start with it). Fails with a 400 naming the path at fault.
 */
export function parseJsonText(text: string, field?: string): unknown {
  let parsed: unknown;
  try {
    // V8's JSON.parse is iterative: any depth parses without touching the stack.
    parsed = JSON.parse(text);
  } catch (err) {
    const reason = (err as Error).message;
    throw invalidRequest(
      field === undefined
        ? `request body is not valid JSON: ${reason}`
        : `${field}: ${showValue(text)} is not valid JSON (${reason})`,
    );
  }
  checkJsonValue(parsed, field);
  return parsed;
}

/** The walk: an explicit stack, no recursion, so deep input fails here with a 400. */
function checkJsonValue(root: unknown, field: string | undefined): void {
  const label = field ?? 'request body';
  if (typeof root === 'number' && !Number.isFinite(root)) throw outOfRange(label, root);
  if (typeof root !== 'object' || root === null) return;
  const stack: Frame[] = [{ value: root, depth: 1, parent: undefined, key: undefined }];
  while (stack.length > 0) {
    const frame = stack.pop()!;
    if (frame.depth > MAX_JSON_DEPTH) {
      throw invalidRequest(
        `${pathOf(frame, field) || label}: JSON nesting is deeper than ${MAX_JSON_DEPTH} levels; voxd accepts at most ${MAX_JSON_DEPTH}`,
      );
    }
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
  if (typeof value === 'object' && value !== null)
    stack.push({ value, depth: frame.depth + 1, parent: frame, key });
}

function outOfRange(path: string, value: number) {
  return invalidRequest(
    `${path}: number out of range (it parses as ${value}); expected a finite number, at most about 1.8e308`,
  );
}

/** `request.options.x` (then `last`); only built on failure, so the walk keeps no string per value. */
function pathOf(frame: Frame, field: string | undefined, last?: string | number): string {
  const keys: (string | number)[] = last === undefined ? [] : [last];
  for (let f: Frame | undefined = frame; f?.key !== undefined; f = f.parent) keys.push(f.key);
  let path = field ?? '';
  for (const key of keys.reverse()) path = keyPath(path, key);
  // A path past the depth limit has MAX_JSON_DEPTH segments; the start names the field.
  return cutText(path, 200);
}
