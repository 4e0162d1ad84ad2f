/**
 * The WebSocket bridge's frames (audio.cpp-server-frontends' `websocket` listener): each text
 * frame is one request to the socket's path, either a raw JSON body (POSTed) or an envelope
 * `{id, method, query, headers, body | body_json}`; each answer is a `response` frame, or for a
 * streamed answer `response.start`, `response.body`..., `response.done`. Bodies are JSON strings:
 * text as it is, anything else base64 (audio.cpp puts the raw bytes in the string, which JSON can
 * only carry as text), said by `body_encoding`.
 */
import { validateHeaderName, validateHeaderValue } from 'node:http';
import { showValue, VoxdError } from '../../errors.js';
import { checkJsonShape, MAX_JSON_DEPTH } from '../../util/json-text.js';
import type { ErrorObject } from '../transport/errors.js';

export type FrameId = string | number | null;

/** One request a frame asks for: the path is always the socket's (frames cannot name another). */
export interface FrameRequest {
  method: string;
  /** The query string (no `?`), or undefined for the upgrade URL's. */
  query: string | undefined;
  /** Headers the frame sets, lower-case names; they win over the upgrade's. */
  headers: Record<string, string>;
  body: Buffer | undefined;
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

/**
 * A frame's JSON object; anything else is a 400 saying what arrived. Its nesting is checked on the
 * text before it is parsed (see json-text.ts): one level more than a body's, since an envelope's
 * `body_json` is a body one level down, which the route then checks as its own.
 */
export function frameObject(text: string): Record<string, unknown> {
  checkJsonShape(text, { limit: MAX_JSON_DEPTH + 1 });
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new VoxdError(
      'E_INVALID_REQUEST',
      `a frame must be a JSON object; it is not JSON (${(err as Error).message})`,
    );
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new VoxdError(
      'E_INVALID_REQUEST',
      `a frame must be a JSON object, got ${Array.isArray(parsed) ? 'an array' : parsed === null ? 'null' : typeof parsed}`,
    );
  return parsed as Record<string, unknown>;
}

/** The id echoed in the answers: a string or a number, else null (as audio.cpp). */
export function frameId(frame: Record<string, unknown>): FrameId {
  const id = frame['id'];
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : null;
}

/** The request of a frame (its `text`, parsed as `frame`); a bad field is a 400 naming it. */
export function frameRequest(frame: Record<string, unknown>, text: string): FrameRequest {
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
      body: Buffer.from(text),
    };

  const headers = frameHeaders(frame['headers']);
  let body: Buffer | undefined;
  if ('body' in frame && 'body_json' in frame) throw invalid('body', 'give body or body_json, not both');
  if ('body' in frame) body = stringBody(frame['body'], frame['body_encoding']);
  else if ('body_encoding' in frame) throw invalid('body_encoding', 'is only read with body');
  else if ('body_json' in frame) {
    body = Buffer.from(JSON.stringify(frame['body_json']));
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

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function stringBody(body: unknown, encoding: unknown): Buffer {
  if (typeof body !== 'string') throw invalid('body', `expected a string, got ${showValue(body)}`);
  if (encoding === undefined || encoding === 'utf8') return Buffer.from(body, 'utf8');
  if (encoding !== 'base64')
    throw invalid('body_encoding', `${showValue(encoding)} is not an encoding; expected "utf8" or "base64"`);
  if (!BASE64.test(body)) throw invalid('body', 'is not base64 (body_encoding is "base64")');
  return Buffer.from(body, 'base64');
}

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
