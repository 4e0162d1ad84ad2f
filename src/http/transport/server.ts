/**
 * The HTTP shell: connections and their drain, the request phases (arrival, dispatch, finish),
 * CORS, keys, the client-gone signal, error mapping and the request's log line. It serves the
 * route table and answers the WebSocket upgrades it is given (src/http/index.ts composes both);
 * handlers return a Reply, which this module writes, so every response takes the same path.
 */

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Codec } from '../../audio/ffmpeg.js';
import type { ServerConfig } from '../../config/types.js';
import { VoxdError } from '../../errors.js';
import { type Logger, requestLogger } from '../../observability/logger.js';
import type { Metrics } from '../../observability/metrics.js';
import type { RequestTrace } from '../../observability/request-trace.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { FrontEnd } from '../../session/front-end.js';
import { type SessionHost, sessionHost } from '../../session/session-host.js';
import type { LazyAbort } from '../../util/lazy-abort.js';
import { type MemoryRelease, memoryRelease } from '../../util/release-memory.js';
import { authorize } from './auth.js';
import { leaseBody, setBodyBudgetOf } from './body-budget.js';
import { clientErrorListener } from './client-error.js';
import { refuseOverCap, wasRefused } from './connection-cap.js';
import { applyCors, preflightEnabled, writePreflight } from './cors.js';
import { checkCrossSite } from './cross-site.js';
import { toHttp } from './errors.js';
import {
  BASE,
  clientLeft,
  cutShortWhy,
  type Exchange,
  hasBody,
  logFields,
  openExchange,
} from './exchange.js';
import { allowHalfOpen, watchHalfClose } from './half-close.js';
import { checkHost } from './host.js';
import { isInMemory, markInMemory } from './in-memory.js';
import { writeReply, writeStream } from './reply.js';
import type { RouteContext } from './route.js';
import { findRoute, type RouteTable } from './route-table.js';
import type { UpgradeShell, Upgrades } from './upgrades.js';

export interface HttpOptions {
  /** What the server serves (src/http/index.ts builds it). */
  routes: RouteTable;
  /** The WebSocket upgrades answered on the same port, by path. */
  upgrades: Upgrades;
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
  /**
   * Told first of a parse failure on a connection (node's 'clientError'): a live body's reader
   * reports it on its stream rather than the request ending without a word.
   */
  onClientError?: (socket: Duplex, err: Error) => void;
}

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
    readonly trace: RequestTrace,
    readonly codec: Codec,
    readonly metrics: Metrics,
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

export interface HttpFrontEnd extends FrontEnd {
  server: Server;
  /**
   * Stops accepting connections, drops connections that have no request in progress (idle
   * keep-alive ones, and ones still sending a request's headers), and makes every later response
   * close its connection; resolves once every connection has ended (WebSocket ones included: the
   * front ends that own them end them).
   */
  drain(): Promise<void>;
  /** Destroys every connection now (a shutdown's deadline): stalled I/O cannot hold it open. */
  cut(): void;
}

export function createHttpServer(runtime: Runtime, config: ServerConfig, options: HttpOptions): HttpFrontEnd {
  return new HttpShell(runtime, config, options);
}

class HttpShell implements HttpFrontEnd, UpgradeShell {
  readonly server: Server;
  readonly #runtime: Runtime;
  readonly #config: ServerConfig;
  readonly #options: HttpOptions;
  readonly #host: SessionHost;
  /** Connections and whether a request is in progress on them, so a drain can drop the others. */
  readonly #connections = new Map<Socket, number>();
  #draining = false;
  /** Levels are fixed for the server's life: the check is made once, not per request. */
  readonly #requestLevel: 'info' | 'debug';
  readonly #logRequests: boolean;
  /** For HTTPS, requests arrive on the TLS socket, which exists once the handshake is done. */
  readonly #connectionEvent: 'secureConnection' | 'connection';

  constructor(runtime: Runtime, config: ServerConfig, options: HttpOptions) {
    this.#runtime = runtime;
    this.#config = config;
    this.#options = options;
    this.#host = options.host ?? sessionHost(config, runtime.clock, options.memory ?? memoryRelease);
    this.#requestLevel = options.logRequests ? 'info' : 'debug';
    this.#logRequests = options.logger.isLevelEnabled(this.#requestLevel);
    this.#connectionEvent = config.tls ? 'secureConnection' : 'connection';
    const listener = (req: IncomingMessage, res: ServerResponse) => this.#request(req, res);
    // HTTPS is the same server behind TLS: one handler, one drain, one error path for both.
    this.server = config.tls
      ? createHttpsServer(
          { cert: config.tls.cert.pem, key: config.tls.key.pem, allowHalfOpen: true },
          listener,
        )
      : createServer(listener);
    this.#wire();
  }

  #wire(): void {
    const server = this.server;
    allowHalfOpen(server);
    server.on(this.#connectionEvent, (socket: Socket) => this.#connected(socket));
    // server.close() calls this. node's own version also destroys a connection whose response was
    // ended but is still being delivered (a large body, a slow reader), losing a finished response;
    // voxd closes only the connections with no request in progress, by its own count.
    server.closeIdleConnections = () => {
      for (const [socket, requests] of this.#connections) if (requests === 0) socket.destroy();
    };
    // node:http ends any request still sending its body after 300 s; a live body is bounded by its
    // own live_ingest limits (total_timeout_ms defaults to 600 s), so that cut-off is lifted.
    server.requestTimeout = 0;
    server.on('clientError', clientErrorListener(this.#options.onClientError));
    server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) =>
      this.#upgrade(req, socket, head),
    );
    setBodyBudgetOf(server, this.#host.budget);
  }

  #connected(socket: Socket): void {
    // A WebSocket bridge request's in-memory connection rides on its WebSocket's, which the cap
    // counted already; it is tracked for drains all the same. Only client connections count
    // under max_connections, over every listener (host.connections).
    if (!isInMemory(socket)) {
      if (refuseOverCap(socket, this.#host.connections)) return;
      socket.once('close', () => this.#host.connections.release());
    }
    this.#connections.set(socket, 0);
    socket.on('close', () => this.#connections.delete(socket));
  }

  /**
   * A WebSocket's socket counts as a connection with a request in progress, so a drain leaves it
   * to the front end that owns it, which ends its sessions itself rather than have them dropped.
   */
  #upgrade(req: IncomingMessage, socket: Socket, head: Buffer): void {
    if (wasRefused(socket)) return;
    this.#connections.set(socket, 1);
    const { paths, other } = this.#options.upgrades;
    const handler = paths.get(new URL(req.url ?? '/', BASE).pathname) ?? other;
    handler(req, socket, head, this);
  }

  routesOf(path: string) {
    return this.#options.routes.routesOf(path);
  }

  inject(socket: Duplex): void {
    markInMemory(socket);
    this.server.emit(this.#connectionEvent, socket);
  }

  drain(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.#draining = true;
      // Stops listening and closes every connection with no request in progress (idle, or still
      // sending headers: nothing to finish) through closeIdleConnections above.
      this.server.close(() => resolve());
    });
  }

  cut(): void {
    this.server.closeAllConnections();
  }

  #request(req: IncomingMessage, res: ServerResponse): void {
    const socket = req.socket;
    // Answered with a 503 when it connected (connection-cap.ts); it is closing.
    if (wasRefused(socket)) return;
    this.#connections.set(socket, (this.#connections.get(socket) ?? 0) + 1);
    this.#handle(req, res).catch((err: unknown) => {
      // Last line of defence: a request never takes the process down.
      this.#options.logger.error({ err }, 'unhandled error');
      res.destroy();
    });
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const ex = this.#arrive(req, res);
    try {
      await this.#dispatch(ex);
    } finally {
      this.#finish(ex);
    }
  }

  /** The log of one request: its lines carry its `req_id`. */
  #logOf(ex: Exchange): Logger {
    ex.log ??= requestLogger(this.#options.logger, ex.reqId);
    return ex.log;
  }

  /**
   * A request's arrival: its id, its target, its body's lease, and the listeners that end with its
   * response (the connection's request count, the client going away, a write after the end).
   */
  #arrive(req: IncomingMessage, res: ServerResponse): Exchange {
    const ex = openExchange(req, res, this.#options.routes);
    const { memory } = this.#host;
    // Reads (probes, scrapes, the UI's polling) leave nothing to give back and must not hold off
    // the idle memory release.
    const work = ex.method !== 'GET' && ex.method !== 'HEAD' && ex.method !== 'OPTIONS';
    if (work) memory.requestStarted();
    // The body's share of the server-wide budget and its deadline, given back when the response closes.
    const config = this.#config;
    if (hasBody(req))
      leaseBody(req, res, this.#host.budget, this.#runtime.clock, config.body_deadline_ms, memory);
    const socket = req.socket;
    // One 'close' listener per request: the request count of its connection, and, when the
    // response is not finished, the client going away.
    res.on('close', () => {
      if (work) memory.requestEnded();
      this.#requestClosed(socket);
      if (res.writableFinished) return;
      ex.cutShort = cutShortWhy(ex, socket);
      ex.clientGone.abort(new VoxdError('E_CLIENT_GONE', 'client closed the connection'));
    });
    // 'close' above is the socket's own (see half-close.ts): a client's FIN alone is probed.
    watchHalfClose(req, res);
    // A write after the response ended is reported as an 'error' event on it, which unhandled would
    // end the process; it means voxd has nothing more to send, so it is logged and dropped.
    res.on('error', (err) => {
      if (!clientLeft(err, ex.clientGone))
        this.#logOf(ex).error({ err }, `${ex.method} ${ex.path} response failed`);
    });
    applyCors(req, res, config);
    return ex;
  }

  /** One request fewer in progress on `socket`. */
  #requestClosed(socket: Socket): void {
    const requests = this.#connections.get(socket);
    if (requests === undefined) return;
    const left = Math.max(0, requests - 1);
    this.#connections.set(socket, left);
    // A keep-alive connection whose last response was delivered during a drain has nothing more
    // to do (a stream's headers went out before the drain, without Connection: close).
    if (this.#draining && left === 0) socket.destroySoon();
  }

  /**
   * The answer: a preflight, or the route's handler with its reply written (a stream to its end);
   * a failure is answered as the error catalogue maps it, or the connection dropped when the
   * headers are already out or the client is gone.
   */
  async #dispatch(ex: Exchange): Promise<void> {
    const { req, res, method, path, clientGone } = ex;
    const config = this.#config;
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
      const reply = await route.handler(this.#context(ex));
      ex.status = reply.status ?? 200;
      if (reply.stream) {
        await writeStream(res, reply.stream, config, clientGone.signal, (err) => {
          if (!clientLeft(err, clientGone)) this.#logOf(ex).error({ err }, `${method} ${path} stream failed`);
        });
      } else if (!clientGone.aborted) writeReply(res, reply, this.#draining);
    } catch (err) {
      this.#fail(ex, err);
    }
  }

  #context(ex: Exchange): RequestContext {
    const { codec, metrics } = this.#options;
    // What a handler logs (the JSON body with log_request_body) is the request's.
    const log = (message: string) => this.#logOf(ex).info(message);
    return new RequestContext(
      ex.req,
      ex.res,
      ex.url,
      this.#runtime,
      this.#config,
      log,
      ex.clientGone,
      ex.trace,
      codec,
      metrics,
    );
  }

  /** A request that failed: answered as the catalogue maps `err`, or dropped when it cannot be. */
  #fail(ex: Exchange, err: unknown): void {
    const { req, res, clientGone } = ex;
    const mapped = toHttp(err);
    ex.status = mapped.status;
    // A body read cut off by the client fails with a bare connection error: the client's doing,
    // told by the request's log line, never a fault with a stack.
    if (mapped.internal && !clientLeft(err, clientGone))
      this.#logOf(ex).error({ err }, `${ex.method} ${ex.path} failed`);
    if (clientGone.aborted || res.headersSent) {
      res.destroy();
      return;
    }
    // An unread request body (413, early 4xx) would otherwise be parsed as the next request.
    if (!req.complete && hasBody(req)) res.setHeader('Connection', 'close');
    writeReply(res, { status: mapped.status, json: mapped.body, headers: mapped.headers }, this.#draining);
  }

  /** The request's metric and its log line, with what the client got (or why it got nothing). */
  #finish(ex: Exchange): void {
    const { method, path, cutShort } = ex;
    const ms = performance.now() - ex.started;
    const final = cutShort?.status ?? ex.status;
    this.#options.metrics.observeHttp(ex.routeLabel, method, final, ms / 1000);
    if (!this.#logRequests) return;
    const line = `${method} ${path} ${final} ${ms.toFixed(1)} ms`;
    this.#logOf(ex)[this.#requestLevel](
      logFields(ex, final, ms),
      cutShort ? `${line}: ${cutShort.why}` : line,
    );
  }
}
