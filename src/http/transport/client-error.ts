/**
 * node:http's parser failed on a connection (malformed request, or a live body with broken chunk
 * framing or cut off). By default node destroys the connection at once, so a live stream could
 * not report why; here a connection whose response is a stream is left to the stream, which is
 * handed the same error through its body reader (the server's `onClientError` option), writes the
 * SSE error event and closes the connection (dropped anyway after a grace period). Other
 * connections get node's default answer.
 */
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

/** Sockets whose response is a stream in progress. */
const streamingSockets = new WeakSet<object>();

/** How long a stream may take to report a broken request body before its connection is dropped. */
const STREAM_ERROR_GRACE_MS = 2000;

const CLIENT_ERROR_RESPONSES: Record<string, string> = {
  HPE_HEADER_OVERFLOW: '431 Request Header Fields Too Large',
  ERR_HTTP_REQUEST_TIMEOUT: '408 Request Timeout',
};

/**
 * Connections dropped for bytes that are not HTTP, so that a request in progress on one (its
 * body's framing broke) is logged as malformed, with the status sent, rather than as a client
 * that left.
 */
const malformed = new WeakMap<Duplex, { code: string; status: number | undefined }>();

/** Marks the socket of a response whose stream runs (`on`) or has ended. */
export function streaming(socket: Socket, on: boolean): void {
  if (on) streamingSockets.add(socket);
  else streamingSockets.delete(socket);
}

/** Why `socket` was dropped as malformed, if it was: the parser's code and the status sent. */
export function malformedCut(socket: Duplex): { code: string; status: number | undefined } | undefined {
  return malformed.get(socket);
}

/** The server's 'clientError' listener; `report` hears every error first (a live body's reader). */
export function clientErrorListener(
  report: ((socket: Duplex, err: Error) => void) | undefined,
): (err: NodeJS.ErrnoException, socket: Duplex) => void {
  return (err, socket) => {
    report?.(socket, err);
    if (streamingSockets.has(socket)) {
      setTimeout(() => socket.destroy(), STREAM_ERROR_GRACE_MS).unref();
      return;
    }
    let status: number | undefined;
    if (socket.writable && (socket as Socket).bytesWritten === 0) {
      const line = CLIENT_ERROR_RESPONSES[err.code ?? ''] ?? '400 Bad Request';
      socket.write(`HTTP/1.1 ${line}\r\nConnection: close\r\n\r\n`);
      status = Number(line.slice(0, 3));
    }
    // A connection cut mid-request (reset, or ended: HPE_INVALID_EOF_STATE) is the client leaving.
    const code = err.code ?? '';
    if (code.startsWith('HPE_') && code !== 'HPE_INVALID_EOF_STATE') malformed.set(socket, { code, status });
    socket.destroy(err);
  };
}
