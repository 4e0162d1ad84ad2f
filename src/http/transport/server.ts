/**
 * The HTTP front end: routing, CORS, the client-gone signal, error mapping and request logging.
 * Handlers return a Reply; this module writes it, so every response takes the same path.
 */

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Codec } from '../../audio/ffmpeg.js';
import type { ServerConfig } from '../../config/types.js';
import { notFound, VoxdError } from '../../errors.js';
import { type Logger, requestLogger } from '../../observability/logger.js';
import { type Metrics, UNKNOWN_ROUTE } from '../../observability/metrics.js';
import { requestIdOf } from '../../observability/request-id.js';
import { RequestTrace } from '../../observability/request-trace.js';
import type { Runtime } from '../../runtime/runtime.js';
import { type SessionHost, sessionHost } from '../../session/session-host.js';
import type { LazyAbort } from '../../util/lazy-abort.js';
import { type MemoryRelease, memoryRelease } from '../../util/release-memory.js';
import { PairEnd } from '../bridge/duplex-pair.js';
import { websocketBridge } from '../bridge/upgrade.js';
import { reportClientError } from '../live/body.js';
import { ClientSecrets } from '../realtime/client-secrets.js';
import { realtimeFrontEnd } from '../realtime/upgrade.js';
import { compileSchemas } from '../request/schema.js';
import { installerRoutes } from '../routes/installer.js';
import { managementRoutes } from '../routes/management.js';
import { metricsRoutes } from '../routes/metrics.js';
import { modelRoutes } from '../routes/models.js';
import { modelsRootRoutes } from '../routes/models-root.js';
import { openapiRoutes } from '../routes/openapi.js';
import { realtimeRoute } from '../routes/realtime.js';
import { realtimeSecretRoutes } from '../routes/realtime-secrets.js';
import { speechRoutes } from '../routes/speech.js';
import { taskRoutes } from '../routes/tasks.js';
import { transcriptionRoutes } from '../routes/transcriptions.js';
import { uiRoutes } from '../routes/ui.js';
import { authorize, REALTIME_PATH } from './auth.js';
import { leaseBody, setBodyBudgetOf } from './body-budget.js';
import { refuseOverCap, wasRefused } from './connection-cap.js';
import { applyCors, preflightEnabled, writePreflight } from './cors.js';
import { checkCrossSite } from './cross-site.js';
import { toHttp } from './errors.js';
import { EventStream } from './event-stream.js';
import { allowHalfOpen, watchHalfClose } from './half-close.js';
import { checkHost } from './host.js';
import type { Reply, Route, RouteContext, StreamReply } from './route.js';

export const ROUTES: readonly Route[] = [
  ...modelRoutes,
  ...speechRoutes,
  ...transcriptionRoutes,
  ...taskRoutes,
  ...managementRoutes,
  ...modelsRootRoutes,
  ...installerRoutes,
  ...uiRoutes,
  realtimeRoute,
  ...realtimeSecretRoutes,
  ...openapiRoutes(() => ROUTES),
  ...metricsRoutes,
];

export interface HttpOptions {
  /** The server's log; each request logs through a child of it that carries its req_id. */
  logger: Logger;
  metrics: Metrics;
  codec: Codec;
  /** Log each request's line at info (`--log`); without it the lines are debug. */
  logRequests: boolean;
  /** When to give memory back after serving; by default the process's own. */
  memory?: MemoryRelease;
  /**
   * What the server's front ends share (byte budget, connection count, memory release): the
   * composition root makes one for HTTP and Wyoming; by default the HTTP server makes its own.
   */
  host?: SessionHost;
}

/** A route path whose last segment is a parameter (`/v1/models/{id}`), as OpenAPI writes it. */
const PARAMETER = /^(.*\/)\{[a-z_]+\}$/;

/** The routes of each path, built once: a request looks its path up rather than scanning ROUTES. */
const ROUTES_BY_PATH = new Map<string, Route[]>();
/** Routes ending in a parameter, by the prefix before it; exact paths win over them. */
const ROUTES_BY_PREFIX = new Map<string, Route[]>();
for (const route of ROUTES) {
  const prefix = PARAMETER.exec(route.path)?.[1];
  const index = prefix === undefined ? ROUTES_BY_PATH : ROUTES_BY_PREFIX;
  const key = prefix ?? route.path;
  const byPath = index.get(key);
  if (byPath) byPath.push(route);
  else index.set(key, [route]);
}

/** The routes of `path`: its own, or those of the parameter route it fills (one plain segment). */
function routesOf(path: string): Route[] | undefined {
  const own = ROUTES_BY_PATH.get(path);
  if (own) return own;
  const slash = path.lastIndexOf('/');
  if (slash === path.length - 1) return undefined;
  return ROUTES_BY_PREFIX.get(path.slice(0, slash + 1));
}

/** The route of `method` among `byPath` (the routes of `path`), else the 405 or 404. */
function findRoute(method: string, path: string, byPath: Route[] | undefined): Route | VoxdError {
  const route = byPath?.find((r) => r.method === method);
  if (route) return route;
  if (byPath) {
    const allowed = byPath.map((r) => r.method).join(', ');
    return new VoxdError(
      'E_METHOD_NOT_ALLOWED',
      `method ${method} is not allowed on ${path}; use ${allowed}`,
    );
  }
  return notFound(`unknown endpoint: ${path}`);
}

/**
 * A path of plain segments (letters, digits, `_`, `-`, and `.` after a segment's first character):
 * URL would parse it to itself, with no dot segment to resolve and nothing to percent-encode.
 */
const PLAIN_PATH = /^(?:\/[A-Za-z0-9_-][A-Za-z0-9_.-]*)+$/;

/** The base every request target is parsed against. */
const BASE = 'http://voxd';

/**
 * What a handler gets. The URL and the AbortSignal are made on first use: most requests need only
 * the path, which a plain target gives without parsing (a URL costs about 5 µs to build), and the
 * runtime takes the client-gone abort without a signal (see LazyAbort).
 */
class RequestContext implements RouteContext {
  #url: URL | undefined;
  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    url: URL | undefined,
    readonly runtime: Runtime,
    readonly config: ServerConfig,
    readonly log: (message: string) => void,
    readonly clientGone: LazyAbort,
    readonly codec: Codec,
    readonly metrics: Metrics,
    readonly secrets: ClientSecrets,
  ) {
    this.#url = url;
  }

  get url(): URL {
    this.#url ??= new URL(this.req.url ?? '/', BASE);
    return this.#url;
  }

  get signal(): AbortSignal {
    return this.clientGone.signal;
  }
}

function writeReply(res: ServerResponse, reply: Reply, draining: boolean): void {
  const headers: Record<string, string | number> = reply.headers ? { ...reply.headers } : {};
  // While draining, every response closes its connection so keep-alive clients do not hold shutdown open.
  if (draining) headers['Connection'] = 'close';
  // JSON goes out as a string: node joins a string body to the headers in one write, where a
  // Buffer takes a writev of two (measured: 12 % of a no-op request's CPU).
  let payload: Buffer | string;
  if (Array.isArray(reply.body)) {
    const pieces = reply.body as readonly Buffer[];
    headers['Content-Type'] = reply.contentType ?? 'application/octet-stream';
    headers['Content-Length'] = pieces.reduce((sum, piece) => sum + piece.length, 0);
    res.writeHead(reply.status ?? 200, headers);
    // Corked, the headers and every piece leave in one writev: on loopback each separate write
    // is a trip through the TCP stack in the sending thread.
    res.cork();
    for (const piece of pieces) res.write(piece);
    res.end();
    res.uncork();
    return;
  }
  if (reply.body !== undefined) {
    payload = reply.body as Buffer;
    headers['Content-Type'] = reply.contentType ?? 'application/octet-stream';
    headers['Content-Length'] = payload.length;
  } else {
    payload = JSON.stringify(reply.json ?? {});
    headers['Content-Type'] = 'application/json';
    headers['Content-Length'] = Buffer.byteLength(payload, 'utf8');
  }
  res.writeHead(reply.status ?? 200, headers);
  res.end(payload);
}

/**
 * Runs a streamed reply. A failure before the first byte is thrown to the caller, which answers
 * with a plain error status; after it, the stream reports it (SSE error event, or a cut raw body)
 * and a fault is logged.
 */
async function writeStream(
  res: ServerResponse,
  reply: StreamReply,
  config: ServerConfig,
  signal: AbortSignal,
  logFault: (err: unknown) => void,
): Promise<void> {
  const out = new EventStream(res, reply.format, config.live_ingest.send_timeout_ms, signal);
  const socket = res.socket;
  if (socket) streamingSockets.add(socket);
  try {
    await reply.run(out);
  } catch (err) {
    if (!out.started) throw err;
    if (toHttp(err).internal) logFault(err);
    await out.fail(err);
  } finally {
    if (socket) streamingSockets.delete(socket);
  }
}

/** Sockets whose response is a stream in progress (see onClientError). */
const streamingSockets = new WeakSet<Socket>();

/** How long a stream may take to report a broken request body before its connection is dropped. */
const STREAM_ERROR_GRACE_MS = 2000;

const CLIENT_ERROR_RESPONSES: Record<string, string> = {
  HPE_HEADER_OVERFLOW: '431 Request Header Fields Too Large',
  ERR_HTTP_REQUEST_TIMEOUT: '408 Request Timeout',
};

/**
 * node:http's parser failed on a connection (malformed request, or a live body with broken chunk
 * framing or cut off). By default node destroys the connection at once, so a live stream could
 * not report why; here a connection whose response is a stream is left to the stream, which is
 * handed the same error through its body reader (reportClientError), writes the SSE error event
 * and closes the connection (dropped anyway after a grace period). Other connections get node's
 * default answer.
 */
function onClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  reportClientError(socket, err);
  if (streamingSockets.has(socket as Socket)) {
    setTimeout(() => socket.destroy(), STREAM_ERROR_GRACE_MS).unref();
    return;
  }
  let status: number | undefined;
  if (socket.writable && (socket as Socket).bytesWritten === 0) {
    const line = CLIENT_ERROR_RESPONSES[err.code ?? ''] ?? '400 Bad Request';
    socket.write(`HTTP/1.1 ${line}\r\nConnection: close\r\n\r\n`);
    status = Number(line.slice(0, 3));
  }
  // A connection cut mid-request (reset, or ended: HPE_INVALID_EOF_STATE) is the client leaving.
  const code = err.code ?? '';
  if (code.startsWith('HPE_') && code !== 'HPE_INVALID_EOF_STATE') malformed.set(socket, { code, status });
  socket.destroy(err);
}

/**
 * Connections dropped by onClientError for bytes that are not HTTP, so that a request in progress
 * on one (its body's framing broke) is logged as malformed, with the status sent, rather than as a
 * client that left.
 */
const malformed = new WeakMap<Duplex, { code: string; status: number | undefined }>();

/** One request, from its arrival to its log line: what the three phases of handling it share. */
interface Exchange {
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
  readonly clientGone: RequestTrace;
  status: number;
  /** Why the connection closed before the response was done, for the request's log line. */
  cutShort: { status: number; why: string } | undefined;
  /** The request's child logger (requestLogger), made when it first logs (most requests never do). */
  log: Logger | undefined;
}

export interface HttpFrontEnd {
  server: Server;
  /**
   * Stops accepting connections, drops connections that have no request in progress (idle
   * keep-alive ones, and ones still sending a request's headers), and makes every later response
   * close its connection; resolves once every connection has ended.
   */
  drain(): Promise<void>;
  /** Destroys every connection now (a shutdown's deadline): stalled I/O cannot hold it open. */
  cut(): void;
}

export function createHttpServer(runtime: Runtime, config: ServerConfig, options: HttpOptions): HttpFrontEnd {
  compileSchemas();
  let draining = false;
  // Connections and whether a request is in progress on them, so a drain can drop the others.
  const connections = new Map<Socket, number>();
  const { logger, metrics } = options;
  const host = options.host ?? sessionHost(config, runtime.clock, options.memory ?? memoryRelease);
  const { memory } = host;
  const bodyBudget = host.budget;
  // Ephemeral realtime keys live as long as this server: a restart forgets them.
  const secrets = new ClientSecrets(runtime.clock, config.max_client_secrets);
  metrics.watchClientSecrets(() => secrets.size);
  // Levels are fixed for the server's life: the check is made once, not per request.
  const requestLevel = options.logRequests ? 'info' : 'debug';
  const logRequests = logger.isLevelEnabled(requestLevel);
  /** The log of one request: its lines carry its `req_id`. */
  const logOf = (ex: Exchange): Logger => {
    ex.log ??= requestLogger(logger, ex.reqId);
    return ex.log;
  };
  /**
   * A request's arrival: its id, its target, its body's lease, and the listeners that end with its
   * response (the connection's request count, the client going away, a write after the end).
   */
  const start = (req: IncomingMessage, res: ServerResponse): Exchange => {
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
    const method = req.method ?? 'GET';
    // A parameter route counts under its pattern, so the metric's label set stays bounded.
    const known = routesOf(path);
    const ex: Exchange = {
      req,
      res,
      reqId,
      started,
      target,
      url,
      path,
      method,
      known,
      routeLabel: known ? known[0]!.path : UNKNOWN_ROUTE,
      clientGone: new RequestTrace(),
      status: 200,
      cutShort: undefined,
      log: undefined,
    };
    // Reads (probes, scrapes, the UI's polling) leave nothing to give back and must not hold off
    // the idle memory release.
    const work = method !== 'GET' && method !== 'HEAD' && method !== 'OPTIONS';
    if (work) memory.requestStarted();
    // The body's share of the server-wide budget and its deadline, given back when the response closes.
    if (hasBody(req)) leaseBody(req, res, bodyBudget, runtime.clock, config.body_deadline_ms, memory);
    const socket = req.socket;
    // One 'close' listener per request: the request count of its connection, and, when the
    // response is not finished, the client going away.
    res.on('close', () => {
      if (work) memory.requestEnded();
      const requests = connections.get(socket);
      if (requests !== undefined) {
        const left = Math.max(0, requests - 1);
        connections.set(socket, left);
        // A keep-alive connection whose last response was delivered during a drain has nothing more
        // to do (a stream's headers went out before the drain, without Connection: close).
        if (draining && left === 0) socket.destroySoon();
      }
      if (res.writableFinished) return;
      const broken = malformed.get(socket);
      ex.cutShort = broken
        ? { status: broken.status ?? 499, why: `malformed request (${broken.code}); connection closed` }
        : {
            status: 499,
            why: `client closed the connection ${
              !req.complete
                ? 'while sending the request body'
                : res.headersSent
                  ? 'while receiving the response'
                  : 'while waiting for the response'
            }`,
          };
      ex.clientGone.abort(new VoxdError('E_CLIENT_GONE', 'client closed the connection'));
    });
    // 'close' above is the socket's own (see half-close.ts): a client's FIN alone is probed.
    watchHalfClose(req, res);
    // A write after the response ended is reported as an 'error' event on it, which unhandled would
    // end the process; it means voxd has nothing more to send, so it is logged and dropped.
    res.on('error', (err) => {
      if (!clientLeft(err, ex.clientGone)) logOf(ex).error({ err }, `${method} ${path} response failed`);
    });
    applyCors(req, res, config);
    return ex;
  };

  /**
   * The answer: a preflight, or the route's handler with its reply written (a stream to its end);
   * a failure is answered as the error catalogue maps it, or the connection dropped when the
   * headers are already out or the client is gone.
   */
  const dispatch = async (ex: Exchange): Promise<void> => {
    const { req, res, method, path, clientGone } = ex;
    try {
      checkHost(req, config);
      if (method === 'OPTIONS' && preflightEnabled(config)) {
        ex.status = 204;
        writePreflight(res);
        return;
      }
      const route = findRoute(method, path, ex.known);
      authorize(req, path, route instanceof VoxdError ? undefined : route, config, () =>
        new URL(ex.target, BASE).searchParams.get('api_key'),
      );
      if (route instanceof VoxdError) throw route;
      checkCrossSite(req, route, config);
      const ctx = new RequestContext(
        req,
        res,
        ex.url,
        runtime,
        config,
        // What a handler logs (the JSON body with log_request_body) is the request's.
        (message) => logOf(ex).info(message),
        clientGone,
        options.codec,
        metrics,
        secrets,
      );
      const reply = await route.handler(ctx);
      ex.status = reply.status ?? 200;
      if (reply.stream) {
        await writeStream(res, reply.stream, config, clientGone.signal, (err) => {
          if (!clientLeft(err, clientGone)) logOf(ex).error({ err }, `${method} ${path} stream failed`);
        });
      } else if (!clientGone.aborted) writeReply(res, reply, draining);
    } catch (err) {
      const mapped = toHttp(err);
      ex.status = mapped.status;
      // A body read cut off by the client fails with a bare connection error: the client's doing,
      // told by the request's log line, never a fault with a stack.
      if (mapped.internal && !clientLeft(err, clientGone))
        logOf(ex).error({ err }, `${method} ${path} failed`);
      if (clientGone.aborted || res.headersSent) {
        res.destroy();
        return;
      }
      // An unread request body (413, early 4xx) would otherwise be parsed as the next request.
      if (!req.complete && hasBody(req)) res.setHeader('Connection', 'close');
      writeReply(res, { status: mapped.status, json: mapped.body, headers: mapped.headers }, draining);
    }
  };

  /** The request's metric and its log line, with what the client got (or why it got nothing). */
  const finish = (ex: Exchange): void => {
    const { req, res, method, path, clientGone, cutShort } = ex;
    const ms = performance.now() - ex.started;
    const final = cutShort?.status ?? ex.status;
    metrics.observeHttp(ex.routeLabel, method, final, ms / 1000);
    if (!logRequests) return;
    const line = `${method} ${path} ${final} ${ms.toFixed(1)} ms`;
    logOf(ex)[requestLevel](
      {
        method,
        route: ex.routeLabel,
        status: final,
        duration_ms: Math.round(ms * 10) / 10,
        model: clientGone.model,
        slot: clientGone.slot,
        queue_ms: roundMs(clientGone.queueMs),
        inference_ms: roundMs(clientGone.inferenceMs),
        bytes_in: byteCount(req.headers['content-length']),
        bytes_out: byteCount(res.getHeader('content-length')),
      },
      cutShort ? `${line}: ${cutShort.why}` : line,
    );
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const ex = start(req, res);
    try {
      await dispatch(ex);
    } finally {
      finish(ex);
    }
  };
  const listener = (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    // Answered with a 503 when it connected (connection-cap.ts); it is closing.
    if (wasRefused(socket)) return;
    connections.set(socket, (connections.get(socket) ?? 0) + 1);
    handle(req, res).catch((err: unknown) => {
      // Last line of defence: a request never takes the process down.
      logger.error({ err }, 'unhandled error');
      res.destroy();
    });
  };
  // HTTPS is the same server behind TLS: one handler, one drain, one error path for both.
  const server: Server = config.tls
    ? createHttpsServer({ cert: config.tls.cert.pem, key: config.tls.key.pem, allowHalfOpen: true }, listener)
    : createServer(listener);
  allowHalfOpen(server);
  // For HTTPS, requests arrive on the TLS socket, which exists once the handshake is done.
  const connectionEvent = config.tls ? 'secureConnection' : 'connection';
  server.on(connectionEvent, (socket: Socket) => {
    // A WebSocket bridge request's in-memory connection (src/http/bridge/dispatch.ts) rides on
    // its WebSocket's, which the cap counted already; it is tracked for drains all the same.
    // Only client connections count under max_connections, over every listener (host.connections).
    if (!(socket instanceof PairEnd)) {
      if (refuseOverCap(socket, host.connections)) return;
      socket.once('close', () => host.connections.release());
    }
    connections.set(socket, 0);
    socket.on('close', () => connections.delete(socket));
  });
  // server.close() calls this. node's own version also destroys a connection whose response was
  // ended but is still being delivered (a large body, a slow reader), losing a finished response;
  // voxd closes only the connections with no request in progress, by its own count.
  server.closeIdleConnections = () => {
    for (const [socket, requests] of connections) if (requests === 0) socket.destroy();
  };
  // node:http ends any request still sending its body after 300 s; a live body is bounded by its
  // own live_ingest limits (total_timeout_ms defaults to 600 s), so that cut-off is lifted.
  server.requestTimeout = 0;
  server.on('clientError', onClientError);
  // WebSocket sessions (the realtime API) on the same port; their socket counts as a connection
  // with a request in progress, so a drain ends the sessions itself rather than dropping them.
  const realtime = realtimeFrontEnd({
    runtime,
    config,
    logger,
    route: realtimeRoute,
    metrics,
    host,
    secrets,
  });
  // audio.cpp's WebSocket bridge (frontend_listener "websocket"): a WebSocket to any other route's
  // path, whose frames are requests handed back to this server as in-memory connections.
  const bridge =
    config.frontend_listener === 'websocket'
      ? websocketBridge({
          runtime,
          config,
          logger,
          routesOf,
          inject: (socket) => server.emit(connectionEvent, socket),
          host,
        })
      : undefined;
  server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    if (wasRefused(socket)) return;
    connections.set(socket, 1);
    if (bridge && upgradePath(req) !== REALTIME_PATH) bridge.upgrade(req, socket, head);
    else realtime.upgrade(req, socket, head);
  });
  setBodyBudgetOf(server, bodyBudget);
  return {
    server,
    drain: () =>
      new Promise<void>((resolve) => {
        draining = true;
        // Stops listening and closes every connection with no request in progress (idle, or still
        // sending headers: nothing to finish) through closeIdleConnections above; realtime sessions
        // end their turns, then close with 1001.
        server.close(() => resolve());
        void realtime.closeAll();
        void bridge?.closeAll();
      }),
    cut: () => {
      server.closeAllConnections();
      realtime.cut();
      bridge?.cut();
    },
  };
}

/** The path an upgrade asks for. */
function upgradePath(req: IncomingMessage): string {
  return new URL(req.url ?? '/', BASE).pathname;
}

/** Whether a request carries a body (one that may be left unread when it is refused early). */
function hasBody(req: IncomingMessage): boolean {
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
function clientLeft(err: unknown, clientGone: { readonly aborted: boolean }): boolean {
  if (err instanceof VoxdError && err.code === 'E_CLIENT_GONE') return true;
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return clientGone.aborted && typeof code === 'string' && CONNECTION_CODES.has(code);
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
