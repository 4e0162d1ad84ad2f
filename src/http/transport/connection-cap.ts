/**
 * max_connections: a connection past the cap is answered at once with a 503 and closed, before any
 * of its request is read, so that clients holding sockets open (300 of them trickling a byte a
 * second held theirs for good) cannot take every descriptor and all the memory their buffers cost.
 * node's own `server.maxConnections` closes such a connection without a word; a client should be
 * told to come back.
 */
import type { Socket } from 'node:net';
import { VoxdError } from '../../errors.js';
import type { ConnectionCount } from '../../session/session-host.js';
import { toHttp } from './errors.js';

/** How long a refused connection waits for the client to close before it is destroyed. */
const REFUSED_LINGER_MS = 2000;

const RETRY_AFTER_S = 1;

/** Connections refused by the cap: node:http still parses what arrives on them, and nothing answers it. */
const refused = new WeakSet<Socket>();

/**
 * Counts `socket` under the server's connection cap, or refuses it when the cap is reached;
 * returns whether it refused.
 */
export function refuseOverCap(socket: Socket, connections: ConnectionCount): boolean {
  if (connections.admit()) return false;
  const max = connections.max;
  refused.add(socket);
  const { status, body } = toHttp(
    new VoxdError(
      'E_TOO_MANY_CONNECTIONS',
      `the server has max_connections=${max} connections open; retry shortly`,
    ),
  );
  const payload = JSON.stringify(body);
  socket.on('error', () => {});
  // The FIN goes out after the answer; the socket is destroyed when the client closes its side
  // (it has read the answer) or after a grace period, not at once: a reset could reach the client
  // before the answer does.
  socket.end(
    `HTTP/1.1 ${status} Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(payload)}\r\nRetry-After: ${RETRY_AFTER_S}\r\nConnection: close\r\n\r\n${payload}`,
  );
  socket.once('end', () => socket.destroy());
  const timer = setTimeout(() => socket.destroy(), REFUSED_LINGER_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
  return true;
}

/** Whether `socket` was refused by the cap (its requests are not served). */
export function wasRefused(socket: Socket): boolean {
  return refused.has(socket);
}
