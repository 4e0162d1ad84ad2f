/**
 * A lingering close, as nginx's `lingering_close`, for the connections of the live routes, whose
 * answer can end while the client is still sending its body (a refusal, a failure, a shutdown).
 *
 * node:http ends a `Connection: close` response with `socket.destroySoon()`: its FIN, then
 * `destroy()` as soon as the answer is written. When bytes the client sent are still unread, the
 * kernel answers that destroy with a reset, and the reset can reach the client before it has read
 * the answer: its next write fails (EPIPE, ECONNRESET) and the answer is lost. The chaos soak saw it
 * on a live upload refused mid-body. On a socket given to `lingerOnClose`, the FIN still goes out
 * once the answer is written, but the socket is destroyed only when the client closes its side, or
 * `LINGER_MS` later, whichever comes first; what the client sends meanwhile is read and dropped
 * (the request is resumed with no reader, see LiveBody.close()).
 */
import type { Socket } from 'node:net';
import type { Clock } from '../../util/clock.js';

/** How long a closing live connection waits for the client's own close before it is destroyed. */
export const LINGER_MS = 2000;

export function lingerOnClose(socket: Socket, clock: Clock): void {
  socket.destroySoon = function lingeringDestroySoon(this: Socket): void {
    if (this.destroyed) return;
    const timer = clock.after(LINGER_MS, () => this.destroy(), { unref: true });
    this.once('close', () => timer.cancel());
    // The client's FIN: it has read the answer (or gone); nothing more to wait for.
    this.once('end', () => this.destroy());
    this.end();
  };
}
