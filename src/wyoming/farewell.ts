/**
 * How voxd closes a Wyoming socket after telling its client why (a connection refused over
 * max_connections, a frame it cannot read, a session timed out, a shutdown). The last event goes
 * out with the FIN; the socket is destroyed once the client closes its side or after a short
 * linger, not at once, since a reset could reach the client before the event does. What the
 * client still sends is read and dropped: unread, its FIN was never seen and the descriptor of
 * every refused connection that had sent a byte stayed open for good (probe 2026-12, F3).
 */
import type { Socket } from 'node:net';

/** How long a closing socket waits for its client to close before it is destroyed. */
export const LINGER_MS = 2000;

export function farewell(socket: Socket, last?: Buffer): void {
  socket.on('error', () => undefined);
  if (socket.destroyed) return;
  socket.once('end', () => socket.destroy());
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
  if (last) socket.end(last);
  else socket.end();
  socket.resume();
}
