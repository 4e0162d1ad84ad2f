/**
 * One request, from its arrival to its log line: what the server's three phases of handling it
 * (arrival, dispatch, finish: server.ts) share, and the small readings of it they make.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { VoxdError } from '../../errors.js';
import type { Logger } from '../../observability/logger.js';
import { UNKNOWN_ROUTE } from '../../observability/metrics.js';
import { requestIdOf } from '../../observability/request-id.js';
import { RequestTrace } from '../../observability/request-trace.js';
import { LazyAbort } from '../../util/lazy-abort.js';
import { malformedCut } from './client-error.js';
import type { Route } from './route.js';
import type { RouteTable } from './route-table.js';

/**
 * A path of plain segments (letters, digits, `_`, `-`, and `.` after a segment's first character):
 * URL would parse it to itself, with no dot segment to resolve and nothing to percent-encode.
 */
const PLAIN_PATH = /^(?:\/[A-Za-z0-9_-][A-Za-z0-9_.-]*)+$/;

/** The base every request target is parsed against. */
export const BASE = 'http://voxd';

export interface Exchange {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly reqId: string;
  readonly started: number;
  readonly target: string;
  /** The parsed target, only when the path needed parsing (PLAIN_PATH). */
  readonly url: URL | undefined;
  readonly path: string;
  readonly method: string;
  /** The routes of the path, when it has any. */
  readonly known: Route[] | undefined;
  /** The path's route pattern for the metrics, else UNKNOWN_ROUTE. */
  readonly routeLabel: string;
  readonly clientGone: LazyAbort;
  /** What the runtime tells of the request's run, for its log line. */
  readonly trace: RequestTrace;
  status: number;
  /** Why the connection closed before the response was done, for the request's log line. */
  cutShort: { status: number; why: string } | undefined;
  /** The request's child logger (requestLogger), made when it first logs (most requests never do). */
  log: Logger | undefined;
}

/** A request as it arrives: its id (set on the response at once), its target and its routes. */
export function openExchange(req: IncomingMessage, res: ServerResponse, routes: RouteTable): Exchange {
  const started = performance.now();
  const reqId = requestIdOf(req.headers['x-request-id']);
  // Set before anything is written, so every response carries it: errors, preflights, streams.
  res.setHeader('X-Request-Id', reqId);
  const target = req.url ?? '/';
  const query = target.indexOf('?');
  const rawPath = query < 0 ? target : target.slice(0, query);
  let url: URL | undefined;
  let path = rawPath;
  if (!PLAIN_PATH.test(rawPath)) {
    url = new URL(target, BASE);
    path = url.pathname;
  }
  // A parameter route counts under its pattern, so the metric's label set stays bounded.
  const known = routes.routesOf(path);
  return {
    req,
    res,
    reqId,
    started,
    target,
    url,
    path,
    method: req.method ?? 'GET',
    known,
    routeLabel: known ? known[0]!.path : UNKNOWN_ROUTE,
    clientGone: new LazyAbort(),
    trace: new RequestTrace(),
    status: 200,
    cutShort: undefined,
    log: undefined,
  };
}

/** Why the connection closed before the response was done: a malformed request, or the client leaving. */
export function cutShortWhy(ex: Exchange, socket: Socket): { status: number; why: string } {
  const { req, res } = ex;
  const broken = malformedCut(socket);
  if (broken)
    return { status: broken.status ?? 499, why: `malformed request (${broken.code}); connection closed` };
  const when = !req.complete
    ? 'while sending the request body'
    : res.headersSent
      ? 'while receiving the response'
      : 'while waiting for the response';
  return { status: 499, why: `client closed the connection ${when}` };
}

/** Whether a request carries a body (one that may be left unread when it is refused early). */
export function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** Error codes of a connection the client closed or reset: I/O errors, never a bug in voxd. */
const CONNECTION_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'ERR_STREAM_PREMATURE_CLOSE']);

/**
 * Whether `err` is the client leaving rather than a fault: the request's own client-gone reason, or
 * a connection error (a request body cut off mid-upload fails node's reader with ECONNRESET
 * "aborted") once the client is known to be gone. Any other error stays a fault, even then.
 */
export function clientLeft(err: unknown, clientGone: { readonly aborted: boolean }): boolean {
  if (err instanceof VoxdError && err.code === 'E_CLIENT_GONE') return true;
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return clientGone.aborted && typeof code === 'string' && CONNECTION_CODES.has(code);
}

/** The fields of a request's log line, with what the client got (`status`) and what the runtime told. */
export function logFields(ex: Exchange, status: number, ms: number): Record<string, unknown> {
  const { req, res, trace } = ex;
  return {
    method: ex.method,
    route: ex.routeLabel,
    status,
    duration_ms: Math.round(ms * 10) / 10,
    model: trace.model,
    slot: trace.slot,
    read_ms: roundMs(since(ex.started, trace.readAt)),
    prepare_ms: roundMs(since(trace.readAt ?? ex.started, trace.preparedAt)),
    queue_ms: roundMs(trace.queueMs),
    inference_ms: roundMs(trace.inferenceMs),
    reply_ms: roundMs(since(trace.ranAt, ex.started + ms)),
    bytes_in: byteCount(req.headers['content-length']),
    bytes_out: byteCount(res.getHeader('content-length')),
  };
}

/** The time from `from` to `to`; undefined when the request never got to either. */
function since(from: number | undefined, to: number | undefined): number | undefined {
  return from === undefined || to === undefined ? undefined : to - from;
}

function roundMs(ms: number | undefined): number | undefined {
  return ms === undefined ? undefined : Math.round(ms * 10) / 10;
}

/** A Content-Length header as a number; undefined when absent (a stream, a chunked upload). */
function byteCount(header: string | number | string[] | undefined): number | undefined {
  if (header === undefined || Array.isArray(header)) return undefined;
  const n = Number(header);
  return Number.isFinite(n) ? n : undefined;
}
