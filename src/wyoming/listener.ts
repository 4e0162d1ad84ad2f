/**
 * The Wyoming listener (`wyoming_port`): a TCP server for Home Assistant and other Wyoming clients,
 * one WyomingConnection per client. Wyoming has no authentication, so a host other than loopback
 * needs --insecure (checked at startup). Its connections count under `max_connections` with HTTP's
 * (host.connections): one past it hears `too_many_connections` and is closed (farewell.ts). The
 * shutdown stops accepting, lets each exchange in progress finish (bounded by the runtime's
 * deadline), then ends every connection; `cut` destroys every socket, refused ones included.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { Logger } from 'pino';
import type { ServerConfig } from '../config/types.js';
import type { Runtime } from '../runtime/runtime.js';
import type { FrontEnd } from '../session/front-end.js';
import type { SessionHost } from '../session/session-host.js';
import { type ConnectionDeps, WyomingConnection } from './connection.js';
import { farewell } from './farewell.js';
import { encodeEvent } from './framing.js';

export interface WyomingListener extends FrontEnd {
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
  extras: Pick<ConnectionDeps, 'metrics' | 'codec'> = {},
): WyomingListener {
  const { metrics } = extras;
  const connections = new Map<Socket, WyomingConnection>();
  /** Refused sockets until they close: a shutdown's cut ends them too. */
  const refused = new Set<Socket>();
  const server = createServer((socket) => {
    if (!host.connections.admit()) {
      refused.add(socket);
      socket.once('close', () => refused.delete(socket));
      farewell(
        socket,
        encodeEvent('error', {
          text: `voxd has max_connections (${host.connections.max}) connections open, HTTP and Wyoming together; try again shortly`,
          code: 'too_many_connections',
        }),
      );
      return;
    }
    socket.setNoDelay(true);
    const connection = new WyomingConnection(socket, { runtime, config, log, host, ...extras });
    connections.set(socket, connection);
    metrics?.wyomingConnection(1);
    socket.once('close', () => {
      connections.delete(socket);
      host.connections.release();
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
      for (const socket of [...connections.keys(), ...refused]) socket.destroy();
    },
  };
}
