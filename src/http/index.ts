/**
 * The HTTP API's composition: the route table (every route voxd serves over HTTP, in one list) and
 * the WebSocket front ends on the same port (the realtime API at /v1/realtime, Deepgram's
 * /v1/listen and /v1/speak and, with
 * `frontend_listener: "websocket"`, audio.cpp's bridge on every other path), handed to the shell
 * (transport/server.ts), which knows none of them. src/app.ts composes the front ends' lifecycles.
 */
import type { Duplex } from 'node:stream';
import type { Codec } from '../audio/ffmpeg.js';
import type { ServerConfig } from '../config/types.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { Runtime } from '../runtime/runtime.js';
import type { SessionHost } from '../session/session-host.js';
import { systemClock } from '../util/clock.js';
import { type BridgeFrontEnd, websocketBridge } from './bridge/upgrade.js';
import { listenSocket } from './deepgram/listen/socket.js';
import { speakSocket } from './deepgram/speak/socket.js';
import { type DeepgramFrontEnd, deepgramFrontEnd } from './deepgram/upgrade.js';
import { reportClientError } from './live/body.js';
import { ClientSecrets } from './realtime/client-secrets.js';
import { type RealtimeFrontEnd, realtimeFrontEnd } from './realtime/upgrade.js';
import { compileSchemas } from './request/schema.js';
import { listenUpgradeRoute, speakUpgradeRoute } from './routes/deepgram.js';
import { deepgramListenRoutes } from './routes/deepgram-listen.js';
import { deepgramSpeakRoutes } from './routes/deepgram-speak.js';
import { installerRoutes } from './routes/installer.js';
import { managementRoutes } from './routes/management.js';
import { metricsRoutes } from './routes/metrics.js';
import { modelRoutes } from './routes/models.js';
import { modelsRootRoutes } from './routes/models-root.js';
import { openapiRoutes } from './routes/openapi.js';
import { realtimeRoute } from './routes/realtime.js';
import { realtimeSecretRoutes } from './routes/realtime-secrets.js';
import { speechRoutes } from './routes/speech.js';
import { taskRoutes } from './routes/tasks.js';
import { transcriptionRoutes } from './routes/transcriptions.js';
import { uiRoutes } from './routes/ui.js';
import { DEEPGRAM_LISTEN_PATH, DEEPGRAM_SPEAK_PATH, REALTIME_PATH } from './transport/auth.js';
import type { Route } from './transport/route.js';
import { RouteTable } from './transport/route-table.js';
import { createHttpServer, type HttpFrontEnd } from './transport/server.js';
import type { UpgradeHandler } from './transport/upgrades.js';

/** Every HTTP route of a server; the ephemeral realtime keys it mints are that server's own. */
function httpRoutes(secrets: ClientSecrets): readonly Route[] {
  const routes: readonly Route[] = [
    ...modelRoutes,
    ...speechRoutes,
    ...transcriptionRoutes,
    ...taskRoutes,
    ...managementRoutes,
    ...modelsRootRoutes,
    ...installerRoutes,
    ...uiRoutes,
    realtimeRoute,
    ...realtimeSecretRoutes(secrets),
    listenUpgradeRoute,
    speakUpgradeRoute,
    ...deepgramListenRoutes,
    ...deepgramSpeakRoutes,
    ...openapiRoutes(() => routes),
    ...metricsRoutes,
  ];
  return routes;
}

/**
 * The same routes, for tests that read only what routes declare (their paths, schemas, scopes):
 * each server builds its own in httpFrontEnds. Their key store mints none.
 */
export const ROUTES: readonly Route[] = httpRoutes(new ClientSecrets(systemClock, 0));

export interface HttpFrontEndOptions {
  /** The server's log; each request logs through a child of it that carries its req_id. */
  logger: Logger;
  metrics: Metrics;
  codec: Codec;
  /** Log each request's line at info (`--log`); without it the lines are debug. */
  logRequests: boolean;
  /** What every front end of the server shares (byte budget, connection count, memory release). */
  host: SessionHost;
}

/** The front ends that answer on the HTTP port; src/app.ts drains and cuts each. */
export interface HttpFrontEnds {
  http: HttpFrontEnd;
  realtime: RealtimeFrontEnd;
  /** Deepgram's live transcription and streaming speech sockets. */
  deepgram: DeepgramFrontEnd;
  /** Only with `frontend_listener: "websocket"`. */
  bridge: BridgeFrontEnd | undefined;
}

export function httpFrontEnds(
  runtime: Runtime,
  config: ServerConfig,
  options: HttpFrontEndOptions,
): HttpFrontEnds {
  const { logger, metrics, host } = options;
  // Ephemeral realtime keys live as long as this server: a restart forgets them.
  const secrets = new ClientSecrets(runtime.clock, config.max_client_secrets);
  metrics.watchClientSecrets(() => secrets.size);
  const routes = new RouteTable(httpRoutes(secrets));
  // Every route's schemas, these routes' among them, compiled now: no request pays for it.
  compileSchemas();
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
    config.frontend_listener === 'websocket' ? websocketBridge({ runtime, config, logger, host }) : undefined;
  const deepgram = deepgramFrontEnd({ runtime, config, log: logger, host, metrics }, [
    listenSocket,
    speakSocket,
  ]);
  const toRealtime: UpgradeHandler = (req, socket, head) => realtime.upgrade(req, socket, head);
  const toDeepgram: UpgradeHandler = (req, socket, head) => deepgram.upgrade(req, socket, head);
  const http = createHttpServer(runtime, config, {
    ...options,
    routes,
    upgrades: {
      paths: new Map([
        [REALTIME_PATH, toRealtime],
        [DEEPGRAM_LISTEN_PATH, toDeepgram],
        [DEEPGRAM_SPEAK_PATH, toDeepgram],
      ]),
      // Without the bridge, the realtime front end refuses every other path (404).
      other: bridge ? (req, socket, head, shell) => bridge.upgrade(req, socket, head, shell) : toRealtime,
    },
    // A live body's reader reports its request's broken framing on its stream.
    onClientError: (socket: Duplex, err: Error) => reportClientError(socket, err),
  });
  return { http, realtime, deepgram, bridge };
}
