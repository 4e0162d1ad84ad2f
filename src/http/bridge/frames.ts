/**
 * The WebSocket bridge's frames (audio.cpp-server-frontends' `websocket` listener): each text
 * frame is one request to the socket's path, either a raw JSON body (POSTed) or an envelope
 * `{id, method, query, headers, body | body_json}`; each answer is a `response` frame, or for a
 * streamed answer `response.start`, `response.body`..., `response.done`. Bodies are JSON strings:
 * text as it is, anything else base64 (audio.cpp puts the raw bytes in the string, which JSON can
 * only carry as text), said by `body_encoding`.
 */
import { validateHeaderName, validateHeaderValue } from 'node:http';
import { decodePaddedBase64, isPaddedBase64Of } from '../../audio/base64.js';
import type { ErrorObject } from '../../errors.js';
import { showValue, VoxdError } from '../../errors.js';
import {
  isPlaceholder,
  type LiftedLiteral,
  liftedJson,
  literalText,
  type ReadJson,
  readJson,
} from '../../util/json-reader.js';
import { MAX_JSON_DEPTH } from '../../util/json-text.js';

export type FrameId = string | number | null;

/** One request a frame asks for: the path is always the socket's (frames cannot name another). */
export interface FrameRequest {
  method: string;
  /** The query string (no `?`), or undefined for the upgrade URL's. */
  query: string | undefined;
  /** Headers the frame sets, lower-case names; they win over the upgrade's. */
  headers: Record<string, string>;
  /** The body in pieces (a body_json's kept literals are the frame's own bytes). */
  body: Uint8Array[] | undefined;
}

/** Fields that make a frame an envelope; a frame with none of them is the body itself. */
const ENVELOPE_FIELDS = ['method', 'query', 'headers', 'body', 'body_json', 'body_encoding'];

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

/**
 * Headers the bridge owns: the framing of the in-process request (a frame setting Content-Length
 * could desynchronise it), its connection, and the upgrade's own.
 */
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'proxy-connection',
  'http2-settings',
]);

export function isReservedHeader(name: string): boolean {
  return RESERVED_HEADERS.has(name) || name.startsWith('sec-websocket-');
}

const invalid = (param: string, message: string) =>
  new VoxdError('E_INVALID_REQUEST', `${param}: ${message}`, { param });

/** A frame read: its object, and the literals of its body kept as bytes. */
export interface ReadFrame {
  frame: Record<string, unknown>;
  literals: ReadJson['literals'];
}

/**
 * A frame's JSON object; anything else is a 400 saying what arrived. It is read a slice at a time
 * (util/json-reader.ts), with a depth one level more than a body's, since an envelope's
 * `body_json` is a body one level down, which the route then reads as its own. The long literals
 * of the body (`body`, and any within `body_json`) stay bytes: the body is handed on as bytes.
 */
export async function readFrame(bytes: Buffer): Promise<ReadFrame> {
  const { value, literals } = await readJson(bytes, {
    limit: MAX_JSON_DEPTH + 1,
    keep: (key, top) => top === 'body_json' || (top === undefined && (key === 'body' || key === 'body_json')),
    notJson: (reason) => `a frame must be a JSON object; it is not JSON (${reason})`,
  });
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new VoxdError(
      'E_INVALID_REQUEST',
      `a frame must be a JSON object, got ${Array.isArray(value) ? 'an array' : value === null ? 'null' : typeof value}`,
    );
  return { frame: value as Record<string, unknown>, literals };
}

/** The id echoed in the answers: a string or a number, else null (as audio.cpp). */
export function frameId(frame: Record<string, unknown>): FrameId {
  const id = frame['id'];
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : null;
}

/** The request of a frame (its `bytes`, read as `read`); a bad field is a 400 naming it. */
export async function frameRequest({ frame, literals }: ReadFrame, bytes: Buffer): Promise<FrameRequest> {
  const id = frame['id'];
  if (id !== undefined && id !== null && frameId(frame) === null)
    throw invalid('id', `expected a string or a number, got ${showValue(id)}`);
  if ('path' in frame)
    throw invalid('path', "the endpoint is the WebSocket URL's path; a frame cannot name another");
  if (!ENVELOPE_FIELDS.some((field) => field in frame))
    return {
      method: 'POST',
      query: undefined,
      headers: { 'content-type': 'application/json' },
      body: [bytes],
    };

  const headers = frameHeaders(frame['headers']);
  let body: Uint8Array[] | undefined;
  if ('body' in frame && 'body_json' in frame) throw invalid('body', 'give body or body_json, not both');
  if ('body' in frame) {
    const kept = isPlaceholder(frame['body']) ? literals.get(frame['body']) : undefined;
    body = [
      kept ? await keptBody(kept, frame['body_encoding']) : stringBody(frame['body'], frame['body_encoding']),
    ];
  } else if ('body_encoding' in frame) throw invalid('body_encoding', 'is only read with body');
  else if ('body_json' in frame) {
    body = liftedJson(frame['body_json'], literals);
    headers['content-type'] ??= 'application/json';
  }
  return { method: frameMethod(frame['method']), query: frameQuery(frame['query']), headers, body };
}

function frameMethod(method: unknown): string {
  if (method === undefined) return 'POST';
  const upper = typeof method === 'string' ? method.toUpperCase() : undefined;
  if (upper === undefined || !METHODS.includes(upper))
    throw invalid('method', `${showValue(method)} is not a method; expected one of ${METHODS.join(', ')}`);
  return upper;
}

function frameQuery(query: unknown): string | undefined {
  if (query === undefined) return undefined;
  // What may follow a path's `?` as sent: printable ASCII, no space or fragment. node's parser
  // refuses any other byte in a request line, and the request would then fail with no answer.
  if (typeof query !== 'string' || /[^!-~]|#/.test(query))
    throw invalid(
      'query',
      `${showValue(query)} is not a query string (percent-encode spaces, non-ASCII characters and the like)`,
    );
  return query.startsWith('?') ? query.slice(1) : query;
}

function frameHeaders(raw: unknown): Record<string, string> {
  if (raw === undefined) return {};
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw invalid('headers', `expected an object of header names to string values, got ${showValue(raw)}`);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    const param = `headers.${name}`;
    const lower = name.toLowerCase();
    if (typeof value !== 'string') throw invalid(param, `expected a string, got ${showValue(value)}`);
    try {
      validateHeaderName(name);
      validateHeaderValue(name, value);
    } catch {
      throw invalid(param, `${showValue(name)}: ${showValue(value)} is not a valid HTTP header`);
    }
    if (isReservedHeader(lower)) throw invalid(param, 'the bridge sets this header; a frame cannot');
    headers[lower] = value;
  }
  return headers;
}

function stringBody(body: unknown, encoding: unknown): Buffer {
  if (typeof body !== 'string') throw invalid('body', `expected a string, got ${showValue(body)}`);
  const kind = bodyEncoding(encoding);
  if (kind === 'utf8') return Buffer.from(body, 'utf8');
  const bytes = Buffer.from(body, 'base64');
  if (!isPaddedBase64Of(body, bytes)) throw notBase64();
  return bytes;
}

/** A long `body` kept as the frame's bytes: its text as it is, or decoded a slice at a time. */
async function keptBody(literal: LiftedLiteral, encoding: unknown): Promise<Buffer> {
  const kind = bodyEncoding(encoding);
  const plain = literal.escaped
    ? Buffer.from(await literalText(literal), kind === 'utf8' ? 'utf8' : 'latin1')
    : undefined;
  if (kind === 'utf8')
    return plain ?? Buffer.from(literal.bytes.buffer, literal.bytes.byteOffset, literal.bytes.byteLength);
  const bytes = await decodePaddedBase64(plain ?? literal.bytes);
  if (!bytes) throw notBase64();
  return bytes;
}

function bodyEncoding(encoding: unknown): BodyEncoding {
  if (encoding === undefined || encoding === 'utf8') return 'utf8';
  if (encoding !== 'base64')
    throw invalid('body_encoding', `${showValue(encoding)} is not an encoding; expected "utf8" or "base64"`);
  return 'base64';
}

const notBase64 = () => invalid('body', 'is not base64 (body_encoding is "base64")');

// ---- Answers ----

export interface ResponseHead {
  status: number;
  content_type: string;
  headers: Record<string, string>;
}

/** Media types whose bytes are text: sent as they are; anything else (audio) is base64. */
export function isText(contentType: string): boolean {
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  return (
    type.startsWith('text/') ||
    type === 'application/json' ||
    type === 'application/x-ndjson' ||
    type === 'application/xml' ||
    type.endsWith('+json') ||
    type.endsWith('+xml')
  );
}

type BodyEncoding = 'utf8' | 'base64';

export function responseFrame(id: FrameId, head: ResponseHead, body: Buffer): string {
  const encoding: BodyEncoding = isText(head.content_type) ? 'utf8' : 'base64';
  return JSON.stringify({
    type: 'response',
    id,
    ...head,
    body: body.toString(encoding),
    body_encoding: encoding,
  });
}

export function startFrame(id: FrameId, head: ResponseHead): string {
  return JSON.stringify({ type: 'response.start', id, ...head });
}

/** One piece of a streamed body: text already decoded (whole characters), or bytes as base64. */
export function bodyFrame(id: FrameId, piece: string | Buffer): string {
  return typeof piece === 'string'
    ? JSON.stringify({ type: 'response.body', id, body: piece, body_encoding: 'utf8' })
    : JSON.stringify({ type: 'response.body', id, body: piece.toString('base64'), body_encoding: 'base64' });
}

export function doneFrame(id: FrameId): string {
  return JSON.stringify({ type: 'response.done', id });
}

/** A streamed answer cut short after its start (audio.cpp's `error` frame): no response.done follows. */
export function errorFrame(id: FrameId, error: Pick<ErrorObject, 'message' | 'type'>): string {
  return JSON.stringify({ type: 'error', id, error });
}
