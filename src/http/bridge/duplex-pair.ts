/**
 * Two connected in-memory streams, what node 22's `stream.duplexPair()` makes (voxd supports node
 * 20, which lacks it): bytes written to one end are read from the other. A write completes only
 * once the other end's reader asks for more, so a reader that stops (a WebSocket client that does
 * not read) holds the writer back as a TCP peer would. Destroying either end destroys both, as a
 * reset connection ends for both sides: that is how a bridged request is cancelled.
 */
import { Duplex } from 'node:stream';

export class PairEnd extends Duplex {
  #peer: PairEnd | undefined;
  /** The callback of the peer's write whose bytes this end holds until its reader asks for more. */
  #pendingWrite: (() => void) | undefined;
  /** The address a server reads off a request's socket (`req.socket.remoteAddress`). */
  remoteAddress: string | undefined;

  connect(peer: PairEnd): void {
    this.#peer = peer;
  }

  override _read(): void {
    const release = this.#pendingWrite;
    this.#pendingWrite = undefined;
    release?.();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (err?: Error | null) => void): void {
    const peer = this.#peer!;
    // The chunk is the peer's to read now; this write is done when the peer's reader wants more.
    if (peer.destroyed) callback(new Error('the other end of the in-memory connection is closed'));
    else if (peer.push(chunk)) callback();
    else peer.#pendingWrite = () => callback();
  }

  override _final(callback: (err?: Error | null) => void): void {
    this.#peer?.push(null);
    callback();
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    const peer = this.#peer;
    if (peer && !peer.destroyed) peer.destroy();
    callback(err);
  }

  /** What node:http calls on a `Connection: close` response's socket, and net.Socket has. */
  destroySoon(): void {
    if (this.writable) this.end();
    if (this.writableFinished) this.destroy();
    else this.once('finish', () => this.destroy());
  }
}

/** Two ends, each the other's peer. */
export function duplexPair(): [PairEnd, PairEnd] {
  const a = new PairEnd({ allowHalfOpen: true });
  const b = new PairEnd({ allowHalfOpen: true });
  a.connect(b);
  b.connect(a);
  return [a, b];
}
