/**
 * The WebSocket upgrade of `GET /v1/realtime` on voxd's own port (and TLS when voxd serves TLS),
 * through `ws`. Everything that can refuse a session refuses it at the upgrade, as an HTTP answer
 * with the usual error body: an unknown path (404), keys (401/403, as HTTP, scope inference, or a
 * live ephemeral key from /v1/realtime/client_secrets, which also names the session's model), a
 * browser Origin that CORS does not allow (403), a shutdown (503), an unknown or non-ASR model in
 * `?model=` (404/400). A session's events then flow on the socket (session.ts).
 */
import type { IncomingMessage } from 'node:http';
import { modelEntry, requireTask } from '../../api/model-lookup.js';
import type { ServerConfig } from '../../config/types.js';
import { VoxdError } from '../../errors.js';
import type { Logger } from '../../observability/logger.js';
import type { Metrics } from '../../observability/metrics.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { SessionHost } from '../../session/session-host.js';
import { authorizeRealtime, REALTIME_PATH } from '../transport/auth.js';
import { checkOrigin } from '../transport/origin.js';
import type { Route } from '../transport/route.js';
import { WebSocketSessions } from '../transport/websocket-sessions.js';
import type { ClientSecrets, SessionStart } from './client-secrets.js';
import { RealtimeSession } from './session.js';

export interface RealtimeDeps {
  runtime: Runtime;
  config: ServerConfig;
  logger: Logger;
  /** The route the upgrade answers for (its scope is the key check's). */
  route: Route;
  metrics?: Metrics;
  /** What every session of the server shares (the byte budget, the clock, the memory release). */
  host: SessionHost;
  /** The ephemeral keys minted by /v1/realtime/client_secrets, which open sessions here only. */
  secrets: ClientSecrets;
}

/** Answers upgrades of /v1/realtime; its drain lets turns in progress end, then an error event and 1001. */
export type RealtimeFrontEnd = WebSocketSessions<Admitted, RealtimeSession>;

interface Admitted {
  model: string | undefined;
  start: SessionStart | undefined;
}

export function realtimeFrontEnd(deps: RealtimeDeps): RealtimeFrontEnd {
  const { logger, metrics } = deps;
  return new WebSocketSessions({
    maxPayload: deps.config.max_websocket_message_bytes,
    // Browsers offer the key as a subprotocol; the answer must be one they offered, never the key.
    protocol: (offered) => (offered.has('realtime') ? 'realtime' : false),
    failed: (err) => logger.error({ err }, 'a realtime session could not open'),
    admit: (req, url, open) => admit(deps, req, url, open),
    open(ws, { model, start }, req, url) {
      const { runtime, config, host } = deps;
      const beta = betaTranscription(req, url);
      const session = new RealtimeSession(ws, {
        runtime,
        config,
        log: logger,
        host,
        model,
        start,
        metrics,
        beta,
      });
      metrics?.realtimeSession(1);
      logger.info({ session: session.id, model }, `realtime session ${session.id} opened`);
      ws.on('close', (code) => {
        metrics?.realtimeSession(-1);
        logger.info({ session: session.id, code }, `realtime session ${session.id} closed (${code})`);
      });
      ws.on('error', (err) => logger.debug({ err, session: session.id }, 'realtime socket error'));
      return session;
    },
  });
}

/** The session's model, and the settings its ephemeral key was minted with; throws the refusal. */
async function admit(deps: RealtimeDeps, req: IncomingMessage, url: URL, open: number): Promise<Admitted> {
  const { runtime, config, route, secrets } = deps;
  if (url.pathname !== REALTIME_PATH)
    throw new VoxdError(
      'E_NOT_FOUND',
      `no WebSocket endpoint at ${url.pathname}; the realtime one is ${REALTIME_PATH}`,
    );
  const queryKey = () => url.searchParams.get('api_key');
  const minted = authorizeRealtime(req, url.pathname, route, config, queryKey, (key) => secrets.find(key));
  checkOrigin(req, config, 'a realtime session');
  if (runtime.closing)
    throw new VoxdError('E_SHUTTING_DOWN', 'voxd is shutting down and takes no new sessions');
  const max = config.max_realtime_sessions;
  if (max > 0 && open > max)
    throw new VoxdError('E_TOO_MANY_SESSIONS', `${max} realtime sessions are open (max_realtime_sessions)`, {
      retryAfterS: 1,
    });
  // The connection's own model wins over the key's, as OpenAI lets a connection override it.
  const model = url.searchParams.get('model') ?? minted?.model;
  if (model !== undefined) {
    const entry = await modelEntry(runtime, model);
    requireTask(entry.config, ['asr', 'diar'], REALTIME_PATH);
  }
  return { model, start: minted?.start };
}

/**
 * Whether a client opens a beta transcription session: OpenAI's beta clients say `OpenAI-Beta:
 * realtime=v1` (a browser, which sets no header, offers the `openai-beta.realtime-v1` subprotocol)
 * and ask `?intent=transcription`. OpenAI answers those with `transcription_session.created` first,
 * which such a client may wait for before it sends its update.
 */
function betaTranscription(req: IncomingMessage, url: URL): boolean {
  if (url.searchParams.get('intent') !== 'transcription') return false;
  const header = req.headers['openai-beta'];
  const protocols = req.headers['sec-websocket-protocol'] ?? '';
  return (
    (typeof header === 'string' && /(^|,)\s*realtime=v1\s*($|,)/.test(header)) ||
    protocols.split(',').some((p) => p.trim() === 'openai-beta.realtime-v1')
  );
}
