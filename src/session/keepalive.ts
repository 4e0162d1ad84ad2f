/**
 * Keepalive pings for a session's WebSocket: a peer that vanished without a FIN (a laptop's lid
 * closed, a NAT forgetting the flow) is never noticed by TCP alone, so its session, its connection
 * slot and what it holds would stay. A pong only proves the peer's WebSocket library is there: it
 * is never activity for an idle timer (a whole event is).
 */
import type { WebSocket } from 'ws';
import type { Clock, Timer } from '../util/clock.js';

/** How often a session pings its client; a ping still unanswered at the next one ends the session. */
export const KEEPALIVE_MS = 30_000;

/** Pings `ws` every KEEPALIVE_MS on `clock`, terminating it once a ping goes unanswered; cancel at its close. */
export function keepAlive(ws: WebSocket, clock: Clock): Timer {
  let pongDue = false;
  // Anything the peer sends shows it is there: its pong may wait behind the events it is sending.
  const onPong = () => {
    pongDue = false;
  };
  ws.on('pong', onPong);
  ws.on('message', onPong);
  const timer = clock.every(KEEPALIVE_MS, () => {
    // While voxd does not read the socket (its own backpressure), no pong can arrive: the peer is
    // judged once reading resumes, or a session paused behind a slow step would be dropped.
    if (ws.isPaused) {
      pongDue = false;
      return;
    }
    if (pongDue) {
      ws.terminate();
      return;
    }
    pongDue = true;
    ws.ping();
  });
  return {
    cancel() {
      timer.cancel();
      ws.off('pong', onPong);
      ws.off('message', onPong);
    },
  };
}
