/**
 * The Wyoming listener (`wyoming_port`): a TCP server for Home Assistant and other Wyoming clients,
 * one WyomingConnection per client. Wyoming has no authentication, so a host other than loopback
 * needs --insecure (checked at startup). Connections past `max_connections` hear an `error` and
 * are closed; one silent for wyoming_idle_timeout_ms is closed (connection.ts). The shutdown stops accepting, lets each
 * exchange in progress finish (bounded by the runtime's deadline), then ends every connection.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { Logger } from 'pino';
import type { ServerConfig } from '../config/types.js';
import type { Metrics } from '../observability/metrics.js';
import type { Runtime } from '../runtime/runtime.js';
import type { SessionHost } from '../session/session-host.js';
import { WyomingConnection } from './connection.js';
import { encodeEvent } from './framing.js';

export interface WyomingListener {
  server: Server;
  /** Stops accepting; each connection ends once its exchange in progress is done. */
  drain(): Promise<void>;
  /** Ends every connection now. */
  cut(): void;
}

export function createWyomingListener(
  runtime: Runtime,
  config: ServerConfig,
  log: Logger,
  host: SessionHost,
  metrics?: Metrics,
): WyomingListener {
  const connections = new Map<Socket, WyomingConnection>();
  const server = createServer((socket) => {
    const cap = config.max_connections;
    if (cap > 0 && connections.size >= cap) {
      socket.on('error', () => undefined);
      socket.end(
        encodeEvent('error', {
          text: `voxd has max_connections (${cap}) Wyoming connections open; try again`,
          code: 'too_many_connections',
        }),
      );
      return;
    }
    socket.setNoDelay(true);
    const connection = new WyomingConnection(socket, { runtime, config, log, metrics });
    connections.set(socket, connection);
    metrics?.wyomingConnection(1);
    socket.on('close', () => {
      connections.delete(socket);
      metrics?.wyomingConnection(-1);
    });
  });
  // An accept that fails (out of descriptors) loses that connection, not the process.
  server.on('error', (err) => log.warn({ err }, 'wyoming: accept failed'));
  return {
    server,
    drain: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      await Promise.all([...connections.values()].map((c) => c.close()));
      await closed;
    },
    cut: () => {
      for (const socket of connections.keys()) socket.destroy();
    },
  };
}
