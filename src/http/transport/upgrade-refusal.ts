/**
 * A WebSocket upgrade refused (unknown path, keys, origin, shutdown, limits): an HTTP answer with
 * the usual error body, written on the raw socket since no response object exists for an upgrade.
 * The socket is then read (what the client still sends is dropped) so that its end is seen and the
 * socket closes, and dropped after REFUSED_SOCKET_MS whatever the client does: an upgraded socket
 * is in no HTTP server's list, yet its net.Server waits for it at close, so one left half-closed
 * held a shutdown forever (the fuzzer's open finding).
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { toHttp } from './errors.js';

/** How long a client has to read a refusal and close its side. */
export const REFUSED_SOCKET_MS = 2000;

export function refuseUpgrade(socket: Socket, err: unknown): void {
  const { status, body, headers } = toHttp(err);
  const json = JSON.stringify(body);
  const extra = Object.entries(headers ?? {})
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.resume();
  // A deadline, not an idle timeout: a client trickling bytes does not keep it.
  const drop = setTimeout(() => socket.destroy(), REFUSED_SOCKET_MS).unref();
  socket.once('close', () => clearTimeout(drop));
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\n${extra}Connection: close\r\n\r\n${json}`,
  );
}
