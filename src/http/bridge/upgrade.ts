/**
 * audio.cpp's WebSocket bridge (`frontend_listener: "websocket"`) on voxd's own port: a WebSocket
 * to any route's path (other than /v1/realtime, which stays the realtime API) carries requests to
 * that path, one per text frame (channel.ts, frames.ts), each run through the HTTP server itself
 * (dispatch.ts). What can refuse a socket refuses it at the upgrade, as an HTTP answer with the
 * usual error body: a path with no route (404), keys (401/403, the path's POST route's scope, or
 * its only route's), a page of another origin (403), a shutdown (503). Each frame's request is then
 * checked again as any HTTP request is, with the upgrade's key.
 */
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';
import type { ServerConfig } from '../../config/types.js';
import { VoxdError } from '../../errors.js';
import type { Logger } from '../../observability/logger.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { FrontEnd } from '../../session/front-end.js';
import type { SessionHost } from '../../session/session-host.js';
import { authorize } from '../transport/auth.js';
import { checkOrigin } from '../transport/origin.js';
import { refuseUpgrade } from '../transport/upgrade-refusal.js';
import type { UpgradeShell } from '../transport/upgrades.js';
import { BridgeChannel, type ChannelOrigin } from './channel.js';
import { isReservedHeader } from './frames.js';

/** Room for a body's envelope around it: its JSON escaping, the other fields. */
const ENVELOPE_SLACK_BYTES = 64 << 10;

export interface BridgeDeps {
  runtime: Runtime;
  config: ServerConfig;
  logger: Logger;
  /** What every front end shares: the byte budget that waiting frames draw on, the clock of their timers. */
  host: SessionHost;
}

export interface BridgeFrontEnd extends FrontEnd {
  /**
   * Answers an `upgrade` event of the HTTP server for a path other than /v1/realtime; the frames'
   * requests go back to the server it came through (`shell`).
   */
  upgrade(req: IncomingMessage, socket: Socket, head: Buffer, shell: UpgradeShell): void;
  /** Ends every socket at a shutdown: requests running are answered, then 1001 (idle ones at once). */
  drain(): Promise<void>;
  /** Drops every socket now (a shutdown's deadline), cancelling what runs on them. */
  cut(): void;
}

/**
 * The largest frame: a body at the JSON limit sent as base64 (4/3 of it) in its envelope, within
 * max_websocket_message_bytes. A body is then held to its own limits by the route, as over HTTP.
 */
export function maxFrameBytes(
  config: Pick<
    ServerConfig,
    'max_json_body_bytes' | 'max_request_body_bytes' | 'max_websocket_message_bytes'
  >,
): number {
  const body = Math.min(config.max_json_body_bytes, config.max_request_body_bytes);
  const frame = Math.ceil((body * 4) / 3) + ENVELOPE_SLACK_BYTES;
  const most = config.max_websocket_message_bytes;
  return most > 0 ? Math.min(most, frame) : frame;
}

export function websocketBridge({ runtime, config, logger, host }: BridgeDeps): BridgeFrontEnd {
  const maxPayload = maxFrameBytes(config);
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload,
    // The bridge speaks no subprotocol; one offered is never echoed back (it could be a key).
    handleProtocols: () => false,
  });
  const channels = new Set<BridgeChannel>();

  const admit = (req: IncomingMessage, url: URL, shell: UpgradeShell): ChannelOrigin => {
    const path = url.pathname;
    const routes = shell.routesOf(path);
    // As over HTTP, the key comes first: which paths exist is told only to a caller with one.
    const queryKey = () => url.searchParams.get('api_key');
    authorize(req, path, routes?.find((r) => r.method === 'POST') ?? routes?.[0], config, queryKey, true);
    if (!routes)
      throw new VoxdError(
        'E_NOT_FOUND',
        `no endpoint at ${path}: a bridge WebSocket connects to the path of the route its frames call (docs/websocket-bridge.md)`,
      );
    checkOrigin(req, config, 'a bridge WebSocket');
    if (runtime.closing)
      throw new VoxdError('E_SHUTTING_DOWN', 'voxd is shutting down and takes no new sockets');
    return { path, ...forwarded(req, url), remoteAddress: req.socket.remoteAddress };
  };

  const open = (ws: WebSocket, origin: ChannelOrigin, shell: UpgradeShell): void => {
    const channel = new BridgeChannel(ws, origin, {
      inject: (socket) => shell.inject(socket),
      logger,
      maxWaitingBytes: 2 * maxPayload,
      host,
      idleMs: config.bridge_idle_timeout_ms,
    });
    channels.add(channel);
    logger.debug({ path: origin.path }, `WebSocket bridge to ${origin.path} opened`);
    ws.on('close', (code) => {
      channels.delete(channel);
      logger.debug({ path: origin.path, code }, `WebSocket bridge to ${origin.path} closed (${code})`);
    });
    ws.on('error', (err) => logger.debug({ err }, 'WebSocket bridge socket error'));
  };

  return {
    upgrade(req, socket, head, shell) {
      // A socket error after the client left is its own business, never the process's.
      socket.on('error', () => socket.destroy());
      let origin: ChannelOrigin;
      try {
        origin = admit(req, new URL(req.url ?? '/', 'http://voxd.invalid'), shell);
      } catch (err) {
        refuseUpgrade(socket, err);
        return;
      }
      wss.handleUpgrade(req, socket, head, (ws) => open(ws, origin, shell));
    },
    async drain() {
      await Promise.all([...channels].map((c) => c.shutdown()));
    },
    cut() {
      for (const client of wss.clients) client.terminate();
    },
  };
}

/**
 * What each bridged request carries from the upgrade: its headers (its Host, not the upgrade's own
 * headers, nor its request id: each request gets its own) and its query. A key given as `?api_key=` (browsers
 * cannot set headers on a WebSocket) becomes the requests' `Authorization`, since HTTP routes
 * read keys from headers only; it leaves the query, so that it is not passed on or logged.
 */
function forwarded(req: IncomingMessage, url: URL): { query: string; headers: Record<string, string> } {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || isReservedHeader(name) || name === 'x-request-id') continue;
    headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  // node:http refuses an HTTP/1.1 request without Host; the upgrade's is the requests' too.
  headers['host'] = req.headers.host ?? 'voxd';
  const params = new URLSearchParams(url.searchParams);
  const key = params.get('api_key');
  params.delete('api_key');
  if (key && headers['authorization'] === undefined && headers['x-api-key'] === undefined)
    headers['authorization'] = `Bearer ${key}`;
  return { query: params.toString(), headers };
}
