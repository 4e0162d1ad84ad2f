/**
 * The sessions of one WebSocket front end (the realtime API, Deepgram's sockets): an upgrade is
 * admitted or refused as an HTTP answer (admit throws), then upgraded with `ws` and opened; the
 * open sessions are counted (an upgrade being checked counts too, so a burst cannot pass a limit
 * between its check and its open), drained at a shutdown and cut at its deadline.
 */
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';
import { VoxdError } from '../../errors.js';
import type { FrontEnd } from '../../session/front-end.js';
import { refuseUpgrade } from './upgrade-refusal.js';

/** An open session, as its front end sees it. */
export interface OpenSession {
  /** The shutdown: what is in progress ends, then the session closes. */
  shutdown(): Promise<void>;
}

export interface WebSocketSessionsOptions<Admitted, Session extends OpenSession> {
  /** The largest message a client may send (max_websocket_message_bytes). */
  maxPayload: number;
  /** The subprotocol answered among those offered (never a key), or false. */
  protocol(offered: Set<string>): string | false;
  /**
   * Checks an upgrade; throws its refusal. `open` counts the sessions open and being checked,
   * this one among them, for a limit.
   */
  admit(req: IncomingMessage, url: URL, open: number): Promise<Admitted>;
  /** Opens the session on its upgraded socket. */
  open(ws: WebSocket, admitted: Admitted, req: IncomingMessage, url: URL): Session;
  /** `open` threw (a fault of voxd's own): the socket is closed 1011; this logs it. */
  failed(err: unknown): void;
}

export class WebSocketSessions<Admitted, Session extends OpenSession> implements FrontEnd {
  readonly #options: WebSocketSessionsOptions<Admitted, Session>;
  readonly #wss: WebSocketServer;
  readonly #sessions = new Set<Session>();
  /** Upgrades being checked: they count against a limit until they open or fail. */
  #opening = 0;
  /** A shutdown began: an upgrade admitted before it and still being checked is refused. */
  #draining = false;

  constructor(options: WebSocketSessionsOptions<Admitted, Session>) {
    this.#options = options;
    this.#wss = new WebSocketServer({
      noServer: true,
      maxPayload: options.maxPayload,
      handleProtocols: (offered) => options.protocol(offered),
    });
  }

  /** Answers an `upgrade` event of the HTTP server. */
  upgrade(req: IncomingMessage, socket: Socket, head: Buffer): void {
    // A socket error after the client left is its own business, never the process's.
    socket.on('error', () => socket.destroy());
    const url = new URL(req.url ?? '/', 'http://voxd.invalid');
    this.#opening++;
    this.#options.admit(req, url, this.#sessions.size + this.#opening).then(
      (admitted) => {
        // The session is in `sessions` once handleUpgrade returns (ws calls back synchronously).
        try {
          if (socket.destroyed) return;
          // The drain took its list of sessions already: one opened now would never be drained.
          if (this.#draining)
            refuseUpgrade(
              socket,
              new VoxdError('E_SHUTTING_DOWN', 'voxd is shutting down and takes no new sessions'),
            );
          else this.#wss.handleUpgrade(req, socket, head, (ws) => this.#open(ws, admitted, req, url));
        } finally {
          this.#opening--;
        }
      },
      (err: unknown) => {
        this.#opening--;
        if (!socket.destroyed) refuseUpgrade(socket, err);
      },
    );
  }

  #open(ws: WebSocket, admitted: Admitted, req: IncomingMessage, url: URL): void {
    let session: Session;
    try {
      session = this.#options.open(ws, admitted, req, url);
    } catch (err) {
      this.#options.failed(err);
      ws.close(1011, 'internal error');
      return;
    }
    this.#sessions.add(session);
    ws.on('close', () => this.#sessions.delete(session));
  }

  async drain(): Promise<void> {
    this.#draining = true;
    await Promise.all([...this.#sessions].map((s) => s.shutdown()));
  }

  cut(): void {
    for (const client of this.#wss.clients) client.terminate();
  }

  /** Open sessions. */
  get size(): number {
    return this.#sessions.size;
  }
}
