/**
 * The WebSocket upgrades of Deepgram's streaming APIs on voxd's own port: live transcription at
 * `GET /v1/listen` (listen-session.ts) and text-in streaming speech at `GET /v1/speak`
 * (speak-session.ts), so a client written for Deepgram (its SDK, LiveKit's and Pipecat's plugins)
 * works against voxd by its base URL alone (docs/deepgram.md). Everything that can refuse a session
 * refuses it here, as an HTTP answer with the usual error body, before the socket is upgraded:
 * keys (`Authorization: Token|Bearer <key>`, or the subprotocols `token, <key>` a browser offers),
 * a browser Origin CORS does not allow (403), a shutdown (503), `max_deepgram_sessions` (503), and
 * the query (its model, encoding, rate: 400/404 naming the parameter). A session's messages then
 * flow on the socket, on the session shell (src/session/) as every streaming protocol's do.
 */
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { type WebSocket, WebSocketServer } from 'ws';
import type { ServerConfig } from '../../config/types.js';
import { VoxdError } from '../../errors.js';
import type { Metrics, SessionProtocol } from '../../observability/metrics.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { FrontEnd } from '../../session/front-end.js';
import type { SessionHost } from '../../session/session-host.js';
import { authorize } from '../transport/auth.js';
import { checkOrigin } from '../transport/origin.js';
import type { Route } from '../transport/route.js';
import { refuseUpgrade } from '../transport/upgrade-refusal.js';

/** What a Deepgram session's module is given to open one. */
export interface DeepgramDeps {
  runtime: Runtime;
  config: ServerConfig;
  log: Logger;
  /** What every session of the server shares: the byte budget, the clock, the memory release. */
  host: SessionHost;
  metrics?: Metrics;
}

/** One open session, as the front end sees it. */
export interface DeepgramSession {
  readonly id: string;
  /** The shutdown: what is in progress ends (a transcript, the audio of flushed text), then 1001. */
  shutdown(): Promise<void>;
}

/** Opens the session on the upgraded socket. */
export type OpenSession = (ws: WebSocket) => DeepgramSession;

/** One of Deepgram's sockets: its path, and how its upgrade's query becomes a session. */
export interface DeepgramSocket {
  readonly path: string;
  /** The protocol label of its metrics and logs. */
  readonly protocol: Extract<SessionProtocol, 'deepgram_listen' | 'deepgram_speak'>;
  /** The GET route of its path (the key check's scope). */
  readonly route: Route;
  /**
   * Checks the upgrade's query and resolves its model; throws the refusal (a VoxdError naming the
   * parameter). Nothing is held until the returned opener runs.
   */
  prepare(url: URL, deps: DeepgramDeps): Promise<OpenSession>;
}

export interface DeepgramFrontEnd extends FrontEnd {
  /** Answers an `upgrade` event of the HTTP server on one of the sockets' paths. */
  upgrade(req: IncomingMessage, socket: Socket, head: Buffer): void;
  /** Open sessions, both kinds. */
  readonly size: number;
}

/** The subprotocol a browser's Deepgram client offers (with its key after it); echoed, never the key. */
const TOKEN_PROTOCOL = 'token';

export function deepgramFrontEnd(deps: DeepgramDeps, sockets: readonly DeepgramSocket[]): DeepgramFrontEnd {
  return new DeepgramSessions(deps, sockets);
}

class DeepgramSessions implements DeepgramFrontEnd {
  readonly #deps: DeepgramDeps;
  readonly #sockets: ReadonlyMap<string, DeepgramSocket>;
  readonly #wss: WebSocketServer;
  readonly #sessions = new Set<DeepgramSession>();
  /** Upgrades being checked: they count against max_deepgram_sessions until they open or fail. */
  #opening = 0;

  constructor(deps: DeepgramDeps, sockets: readonly DeepgramSocket[]) {
    this.#deps = deps;
    this.#sockets = new Map(sockets.map((s) => [s.path, s]));
    this.#wss = new WebSocketServer({
      noServer: true,
      maxPayload: deps.config.max_websocket_message_bytes,
      handleProtocols: (offered) => (offered.has(TOKEN_PROTOCOL) ? TOKEN_PROTOCOL : false),
    });
  }

  async #admit(req: IncomingMessage, url: URL): Promise<{ kind: DeepgramSocket; open: OpenSession }> {
    const { runtime, config } = this.#deps;
    const kind = this.#sockets.get(url.pathname);
    if (kind === undefined)
      throw new VoxdError(
        'E_NOT_FOUND',
        `no WebSocket endpoint at ${url.pathname}; Deepgram's are ${[...this.#sockets.keys()].join(' and ')}`,
      );
    authorize(req, url.pathname, kind.route, config, () => null);
    checkOrigin(req, config, 'a Deepgram session');
    if (runtime.closing)
      throw new VoxdError('E_SHUTTING_DOWN', 'voxd is shutting down and takes no new sessions');
    const max = config.max_deepgram_sessions;
    // `opening` counts this upgrade too.
    if (max > 0 && this.#sessions.size + this.#opening > max)
      throw new VoxdError(
        'E_TOO_MANY_SESSIONS',
        `${max} Deepgram sessions are open (max_deepgram_sessions)`,
        {
          retryAfterS: 1,
        },
      );
    return { kind, open: await kind.prepare(url, this.#deps) };
  }

  #open(ws: WebSocket, kind: DeepgramSocket, open: OpenSession): void {
    const { log, metrics } = this.#deps;
    const session = open(ws);
    const socket = kind.path.slice(kind.path.lastIndexOf('/') + 1);
    this.#sessions.add(session);
    metrics?.deepgramSession(kind.protocol, 1);
    log.info({ session: session.id, protocol: kind.protocol }, `${kind.path} session ${session.id} opened`);
    ws.on('close', (code) => {
      this.#sessions.delete(session);
      metrics?.deepgramSession(kind.protocol, -1);
      log.info({ session: session.id, code }, `${kind.path} session ${session.id} closed (${code})`);
    });
    ws.on('error', (err) => log.debug({ err, session: session.id }, `${socket} socket error`));
  }

  upgrade(req: IncomingMessage, socket: Socket, head: Buffer): void {
    // A socket error after the client left is its own business, never the process's.
    socket.on('error', () => socket.destroy());
    const url = new URL(req.url ?? '/', 'http://voxd.invalid');
    this.#opening++;
    this.#admit(req, url).then(
      ({ kind, open }) => {
        // The session is in `sessions` once handleUpgrade returns (ws calls back synchronously).
        try {
          if (!socket.destroyed)
            this.#wss.handleUpgrade(req, socket, head, (ws) => this.#open(ws, kind, open));
        } finally {
          this.#opening--;
        }
      },
      (err: unknown) => {
        this.#opening--;
        if (!socket.destroyed) refuseUpgrade(socket, err);
      },
    );
  }

  async drain(): Promise<void> {
    await Promise.all([...this.#sessions].map((s) => s.shutdown()));
  }

  cut(): void {
    for (const client of this.#wss.clients) client.terminate();
  }

  get size(): number {
    return this.#sessions.size;
  }
}
