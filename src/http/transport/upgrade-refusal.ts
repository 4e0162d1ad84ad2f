/**
 * A WebSocket upgrade refused (unknown path, keys, origin, shutdown, limits): an HTTP answer with
 * the usual error body, written on the raw socket since no response object exists for an upgrade.
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { toHttp } from './errors.js';

export function refuseUpgrade(socket: Socket, err: unknown): void {
  const { status, body, headers } = toHttp(err);
  const json = JSON.stringify(body);
  const extra = Object.entries(headers ?? {})
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\n${extra}Connection: close\r\n\r\n${json}`,
  );
}
