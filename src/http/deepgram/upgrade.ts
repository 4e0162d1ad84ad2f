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
import type { Logger } from 'pino';
import type { WebSocket } from 'ws';
import type { ServerConfig } from '../../config/types.js';
import { VoxdError } from '../../errors.js';
import type { Metrics, SessionProtocol } from '../../observability/metrics.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { SessionHost } from '../../session/session-host.js';
import { authorize } from '../transport/auth.js';
import { checkOrigin } from '../transport/origin.js';
import type { Route } from '../transport/route.js';
import { WebSocketSessions } from '../transport/websocket-sessions.js';

/** What a Deepgram session's module is given to open one. */
export interface DeepgramDeps {
  runtime: Runtime;
  config: ServerConfig;
  log: Logger;
  /** What every session of the server shares: the byte budget, the clock, the memory release. */
  host: SessionHost;
  metrics?: Metrics;
}

/** The session shell's timers of a Deepgram socket, and the socket's flow control, both kinds alike. */
export function deepgramShellOptions(config: ServerConfig, ws: WebSocket) {
  return {
    idleMs: config.deepgram_idle_timeout_ms,
    idleSetting: 'deepgram_idle_timeout_ms',
    lifetimeMs: config.deepgram_max_session_ms,
    lifetimeSetting: 'deepgram_max_session_ms',
    pause: () => ws.pause(),
    resume: () => ws.resume(),
  };
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

/** Answers upgrades on the sockets' paths; `size` counts both kinds. */
export type DeepgramFrontEnd = WebSocketSessions<
  { kind: DeepgramSocket; open: OpenSession },
  DeepgramSession
>;

/** The subprotocol a browser's Deepgram client offers (with its key after it); echoed, never the key. */
const TOKEN_PROTOCOL = 'token';

export function deepgramFrontEnd(deps: DeepgramDeps, sockets: readonly DeepgramSocket[]): DeepgramFrontEnd {
  const byPath = new Map(sockets.map((s) => [s.path, s]));
  const { log, metrics } = deps;
  return new WebSocketSessions({
    maxPayload: deps.config.max_websocket_message_bytes,
    protocol: (offered) => (offered.has(TOKEN_PROTOCOL) ? TOKEN_PROTOCOL : false),
    failed: (err) => log.error({ err }, 'a Deepgram session could not open'),
    admit: (req, url, open) => admit(deps, byPath, req, url, open),
    open(ws, { kind, open }) {
      const session = open(ws);
      metrics?.deepgramSession(kind.protocol, 1);
      log.info({ session: session.id, protocol: kind.protocol }, `${kind.path} session ${session.id} opened`);
      ws.on('close', (code) => {
        metrics?.deepgramSession(kind.protocol, -1);
        log.info({ session: session.id, code }, `${kind.path} session ${session.id} closed (${code})`);
      });
      ws.on('error', (err) => log.debug({ err, session: session.id }, `${kind.path} socket error`));
      return session;
    },
  });
}

/** The socket an upgrade asks for, and its opener; throws the refusal. */
async function admit(
  deps: DeepgramDeps,
  sockets: ReadonlyMap<string, DeepgramSocket>,
  req: IncomingMessage,
  url: URL,
  open: number,
): Promise<{ kind: DeepgramSocket; open: OpenSession }> {
  const { runtime, config } = deps;
  const kind = sockets.get(url.pathname);
  if (kind === undefined)
    throw new VoxdError(
      'E_NOT_FOUND',
      `no WebSocket endpoint at ${url.pathname}; Deepgram's are ${[...sockets.keys()].join(' and ')}`,
    );
  authorize(req, url.pathname, kind.route, config, () => null);
  checkOrigin(req, config, 'a Deepgram session');
  if (runtime.closing)
    throw new VoxdError('E_SHUTTING_DOWN', 'voxd is shutting down and takes no new sessions');
  const max = config.max_deepgram_sessions;
  if (max > 0 && open > max)
    throw new VoxdError('E_TOO_MANY_SESSIONS', `${max} Deepgram sessions are open (max_deepgram_sessions)`, {
      retryAfterS: 1,
    });
  return { kind, open: await kind.prepare(url, deps) };
}
