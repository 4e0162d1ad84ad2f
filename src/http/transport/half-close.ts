/**
 * Half-closed clients. A client that sends its request and then shuts its sending side (HTTP/1.0
 * clients, `nc -N`, `shutdown(SHUT_WR)`) still waits for the answer, so the server keeps such a
 * connection open (`httpAllowHalfOpen`) and "client gone" means the socket really closed.
 *
 * TCP cannot tell a half-close from a client that closed its socket and left: both arrive as a FIN.
 * Data sent to a socket its owner closed is answered with a reset, so the connection is probed
 * when the FIN comes, again shortly after and then once a second, with bytes the client ignores:
 * an interim `102 Processing` while the answer has not started (HTTP/1.1 only: no 1xx may go to
 * an HTTP/1.0 client, RFC 9110 §15.2; every HTTP/1.1 client must skip one), an SSE comment line
 * during an event stream. A client that left makes the next write fail, its socket closes and the
 * request is cancelled as client gone; one that is waiting is answered. A raw (audio) stream has
 * no bytes a client would ignore: a FIN that comes once its body has begun is taken as the client
 * leaving; one that comes while only its headers went out is the client's half-close after its
 * request (a client that left then is found at the stream's next writes). An HTTP/1.0 client
 * that left before its answer began is found when it is written.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';

/** Probes after the FIN: at once, once the first one's reset can have come back, then each second. */
const PROBE_DELAYS_MS = [0, 20];
export const HALF_CLOSE_PROBE_MS = 1000;

/** Responses whose (streamed) body has begun: see streamBodyStarted. */
const started = new WeakSet<ServerResponse>();

/** Called by a stream as it writes its first body bytes. */
export function streamBodyStarted(res: ServerResponse): void {
  started.add(res);
}

/** Keeps half-closed connections open until their answers are written (node:http and node:https). */
export function allowHalfOpen(server: Server): void {
  // node:http creates its net.Server with allowHalfOpen and ends the socket itself on the client's
  // FIN unless this is set (its createServer takes no such option).
  (server as Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
}

/** Watches one request's connection for the client's FIN and probes it (see above). */
export function watchHalfClose(req: IncomingMessage, res: ServerResponse): void {
  const http11 = req.httpVersionMajor > 1 || (req.httpVersionMajor === 1 && req.httpVersionMinor >= 1);
  const socket = req.socket;
  let timer: NodeJS.Timeout | undefined;
  let probes = 0;
  const stop = () => {
    clearTimeout(timer);
    socket.off('end', probe);
    res.off('close', stop);
    res.off('finish', stop);
  };
  function probe() {
    // A body cut off by the FIN is the body reader's to report (a live route's stream says so).
    if (socket.destroyed || res.writableEnded || !req.complete) return stop();
    if (!res.headersSent) {
      if (!http11) return stop();
      res.writeProcessing();
    } else if (String(res.getHeader('content-type')).startsWith('text/event-stream')) {
      res.write(':\n\n');
    } else {
      // A raw stream whose body was under way when the FIN came: the client is leaving.
      if (probes === 0 && started.has(res)) socket.destroy();
      return stop();
    }
    const delay = PROBE_DELAYS_MS[++probes] ?? HALF_CLOSE_PROBE_MS;
    timer = setTimeout(probe, delay);
    timer.unref();
  }
  res.once('close', stop);
  res.once('finish', stop);
  if (socket.readableEnded) probe();
  else socket.once('end', probe);
}
