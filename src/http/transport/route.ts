/** What a route handler gets and gives back; the server writes the reply. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TSchema } from '@sinclair/typebox';
import type { Codec } from '../../audio/ffmpeg.js';
import type { ServerConfig } from '../../config/types.js';
import { VoxdError } from '../../errors.js';
import type { Metrics } from '../../observability/metrics.js';
import type { RequestTrace } from '../../observability/request-trace.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { AbortSource } from '../../util/lazy-abort.js';
import type { EventStream, StreamFormat } from './event-stream.js';

export interface RouteContext {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  runtime: Runtime;
  config: ServerConfig;
  log(message: string): void;
  /** Aborted when the client goes away before the response is sent. */
  signal: AbortSignal;
  /**
   * The same abort as `signal`, for code that only reads it and listens to it (the runtime), without
   * making the AbortSignal (slow on Node 20, see LazyAbort). The server sets it; a caller that builds
   * its own context may leave it out.
   */
  clientGone?: AbortSource;
  /** The request's trace, handed to the runtime so its log line names the model and times. */
  trace?: RequestTrace;
  /** ffmpeg, for audio formats other than WAV and PCM (it may be unavailable). */
  codec: Codec;
  /** The server's metrics; absent in a context built outside the server. */
  metrics?: Metrics;
}

export interface Reply {
  status?: number;
  json?: unknown;
  /** The body, or its pieces in order (sent together in one write, without being joined). */
  body?: Buffer | readonly Buffer[];
  contentType?: string;
  headers?: Record<string, string>;
  /** A streamed response instead of a body. */
  stream?: StreamReply;
}

export interface StreamReply {
  format: StreamFormat;
  /**
   * Writes the stream. The server calls it exactly once, even when the client is already gone,
   * so that whatever the handler took (a slot lease) is released in one place: its `finally`.
   */
  run(out: EventStream): Promise<void>;
}

export type RouteHandler = (ctx: RouteContext) => Promise<Reply>;

/**
 * Who may call a route once API keys are set (src/http/transport/auth.ts): `open`, anyone (the UI's files;
 * /health, /ready and /metrics as `open_endpoints` says); `inference`, any key; `admin`, an admin key.
 */
export type RouteScope = 'open' | 'inference' | 'admin';

export interface Route {
  method: 'GET' | 'POST';
  path: string;
  scope: RouteScope;
  handler: RouteHandler;
  /**
   * The JSON body the route reads, as its schema (src/http/schemas): the route checks requests
   * against it and the OpenAPI document publishes it, under the schema's `title`.
   */
  body?: TSchema;
  /** The multipart form fields the route reads (each a string or a file part), for the document. */
  form?: TSchema;
  /**
   * The query parameters the route reads, as an object schema (src/http/schemas/query.ts): the
   * route checks them (queryRoute) and the document publishes each property as a parameter.
   */
  query?: TSchema;
  /**
   * The JSON body of the route's 200 answer (src/http/schemas/*-responses.ts), declared here so the
   * document publishes it from the route, as it does the request's schemas.
   */
  response?: TSchema;
}

/** The request's client-gone abort, as cheaply as the context offers it. */
export function clientGoneOf(ctx: Pick<RouteContext, 'signal' | 'clientGone'>): AbortSource {
  return ctx.clientGone ?? ctx.signal;
}

/**
 * The `ui_management` gate: a 403 saying what is disabled (audio.cpp's words for each route) and
 * how to turn it on.
 */
export function requireManagement(
  { config }: Pick<RouteContext, 'config'>,
  disabled = 'dynamic model management is disabled',
): void {
  if (!config.ui_management)
    throw new VoxdError('E_FORBIDDEN', `${disabled}; start voxd with --ui-management`);
}
