/**
 * One WebSocket of the bridge, on the session shell (src/session/session-shell.ts): its frames are
 * requests to its path, answered one at a time in the order they came (as audio.cpp's bridge does:
 * a client that wants requests side by side opens more sockets, each a connection under
 * max_connections). Everything it holds is bounded: frames waiting behind the running one
 * (MAX_WAITING_FRAMES, their bytes per socket, and those bytes again on the server-wide byte budget,
 * so that many sockets at once stay inside max_inflight_body_bytes), what the client has not read
 * yet (a streamed answer waits for it; past MAX_UNREAD_BYTES the socket closes with 1008), and its
 * time: no frame for bridge_idle_timeout_ms while none of its requests runs closes it with 1000,
 * and a peer that stops answering pings is dropped. A socket that closes cancels the request running
 * and drops the ones waiting.
 */
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import { ERROR_CODES, VoxdError } from '../../errors.js';
import type { Logger } from '../../observability/logger.js';
import { keepAlive } from '../../session/keepalive.js';
import type { SessionHost } from '../../session/session-host.js';
import { SessionShell } from '../../session/session-shell.js';
import type { Timer } from '../../util/clock.js';
import { toHttp } from '../transport/errors.js';
import { type AnswerSink, dispatchInProcess } from './dispatch.js';
import {
  bodyFrame,
  doneFrame,
  errorFrame,
  type FrameId,
  frameId,
  frameRequest,
  readFrame,
  responseFrame,
  startFrame,
} from './frames.js';
import { refusedFrameId } from './refused-frame-id.js';

/** Requests a socket may have waiting behind the one running; one more is answered 503 at once. */
export const MAX_WAITING_FRAMES = 16;
/** Unread answer bytes past which a streamed answer waits for the client to read. */
const STREAM_HIGH_WATER = 1 << 20;
/**
 * Unread answer bytes past which the client is taken as not reading at all, checked before each
 * request starts and each answer is sent: the socket closes with 1008. One whole answer (a long
 * WAV) may go past it once; the next check closes it.
 */
export const MAX_UNREAD_BYTES = 16 << 20;

/** What every request of one socket shares: its path, the upgrade's query, headers and address. */
export interface ChannelOrigin {
  path: string;
  query: string;
  headers: Record<string, string>;
  remoteAddress: string | undefined;
}

export interface ChannelDeps {
  /** Hands an in-memory connection to voxd's HTTP server as an accepted one (dispatch.ts). */
  inject: (socket: Duplex) => void;
  logger: Logger;
  /** Bytes of frames a socket may hold waiting (their count is bounded too). */
  maxWaitingBytes: number;
  /** The server's byte budget, connection count, memory release and clock. */
  host: SessionHost;
  /** bridge_idle_timeout_ms: no frame for this long while no request of the socket runs closes it (0: never). */
  idleMs: number;
}

export class BridgeChannel {
  readonly #ws: WebSocket;
  readonly #origin: ChannelOrigin;
  readonly #deps: ChannelDeps;
  readonly #shell: SessionShell;
  readonly #keepalive: Timer;
  /** Frames taken and not yet over: the one running (or about to) and those waiting behind it. */
  #taken = 0;
  /** Bytes of the frames waiting, all of them held on the server's budget too. */
  #waitingBytes = 0;
  #closing = false;

  constructor(ws: WebSocket, origin: ChannelOrigin, deps: ChannelDeps) {
    this.#ws = ws;
    this.#origin = origin;
    this.#deps = deps;
    this.#shell = new SessionShell(deps.host, {
      what: `bridge WebSocket to ${origin.path}`,
      protocol: 'bridge',
      // The backlog is refused frame by frame (503 bridge_backlog) before the inbox could fill: its
      // pause is only a guard.
      inboxEvents: MAX_WAITING_FRAMES + 2,
      idleMs: deps.idleMs,
      idleSetting: 'bridge_idle_timeout_ms',
      pause: () => ws.pause(),
      resume: () => ws.resume(),
      // Every frame voxd sends answers a request; an idle close answers none, so it is said in the
      // close itself (code 1000, reason session_idle_timeout), as the bridge's other closes are.
      expire: (why) => this.#end(1000, why, ERROR_CODES[why.code].apiCode),
    });
    this.#keepalive = keepAlive(ws, deps.host.clock);
    ws.on('message', (data: Buffer, isBinary: boolean) => this.#receive(data, isBinary));
    ws.on('close', () => {
      this.#closing = true;
      this.#keepalive.cancel();
      this.#shell.leave(new VoxdError('E_CLIENT_GONE', 'the client closed the bridge WebSocket'));
    });
  }

  /**
   * Ends the socket at a shutdown: the request running finishes and is answered, then 1001. Frames
   * waiting are dropped without running, so an idle socket, or one with only frames waiting, closes
   * at once.
   */
  async shutdown(): Promise<void> {
    this.#closing = true;
    await this.#shell.settled();
    this.#end(1001, new VoxdError('E_SHUTTING_DOWN', 'voxd is shutting down'), 'voxd is shutting down');
  }

  /** The session is over for `why`: the request running is cancelled, what it holds goes back, then the close. */
  #end(code: number, why: VoxdError, reason: string): void {
    this.#closing = true;
    this.#keepalive.cancel();
    this.#shell.leave(why);
    if (this.#ws.readyState === this.#ws.OPEN) this.#ws.close(code, reason);
  }

  #receive(data: Buffer, isBinary: boolean): void {
    if (isBinary) {
      this.#answerError(
        null,
        new VoxdError(
          'E_INVALID_REQUEST',
          'binary frames are not requests; send each request as a JSON text frame',
        ),
      );
      return;
    }
    if (this.#closing) {
      this.#answerError(
        refusedFrameId(data),
        new VoxdError('E_SHUTTING_DOWN', 'voxd is shutting down and takes no new requests'),
      );
      return;
    }
    // A frame with nothing ahead of it runs at once; the others wait, bounded per socket and held
    // on the server's budget until they start (the HTTP request's own body lease counts them then).
    const waits = this.#taken > 0;
    if (waits) {
      if (
        this.#taken - 1 >= MAX_WAITING_FRAMES ||
        this.#waitingBytes + data.length > this.#deps.maxWaitingBytes
      ) {
        this.#answerError(
          refusedFrameId(data),
          new VoxdError(
            'E_BRIDGE_BACKLOG',
            `this WebSocket already has ${this.#taken - 1} requests waiting behind the one running; wait for their answers, or open another socket`,
            { retryAfterS: 1 },
          ),
        );
        return;
      }
      try {
        this.#shell.bytes.hold(data.length);
      } catch (err) {
        this.#answerError(refusedFrameId(data), err);
        return;
      }
      this.#waitingBytes += data.length;
    }
    // Taken out when the frame starts, so that its bytes are not kept beside its request's.
    const frame: { data?: Buffer; held: number } = { data, held: waits ? data.length : 0 };
    this.#taken++;
    this.#shell.receive(async () => {
      this.#shell.bytes.free(frame.held);
      this.#waitingBytes -= frame.held;
      try {
        if (this.#closing || !this.#roomToAnswer()) return;
        await this.#shell.work((signal) => this.#run(takeBytes(frame), signal));
      } finally {
        frame.data = undefined;
        this.#taken--;
      }
    });
  }

  async #run(bytes: Buffer, signal: AbortSignal): Promise<void> {
    let id: FrameId = null;
    try {
      const read = await readFrame(bytes);
      id = frameId(read.frame);
      const request = await frameRequest(read, bytes);
      const query = request.query ?? this.#origin.query;
      await dispatchInProcess(
        {
          method: request.method,
          target: query === '' ? this.#origin.path : `${this.#origin.path}?${query}`,
          headers: { ...this.#origin.headers, ...request.headers },
          body: request.body,
          remoteAddress: this.#origin.remoteAddress,
        },
        this.#deps.inject,
        this.#sinkFor(id),
        signal,
      );
    } catch (err) {
      if (!this.#closing) this.#answerError(id, err);
    }
  }

  #sinkFor(id: FrameId): AnswerSink {
    return {
      whole: (head, body) => this.#send(responseFrame(id, head, body)),
      start: (head) => this.#send(startFrame(id, head)),
      piece: (piece) => this.#sendPiece(bodyFrame(id, piece)),
      done: () => this.#send(doneFrame(id)),
      cut: () =>
        this.#send(
          errorFrame(id, {
            message: 'the answer stream ended early (see the server log)',
            type: 'server_error',
          }),
        ),
    };
  }

  #answerError(id: FrameId, err: unknown): void {
    const mapped = toHttp(err);
    if (mapped.internal) this.#deps.logger.error({ err }, `WebSocket bridge ${this.#origin.path} failed`);
    this.#send(
      responseFrame(
        id,
        { status: mapped.status, content_type: 'application/json', headers: mapped.headers ?? {} },
        Buffer.from(JSON.stringify(mapped.body)),
      ),
    );
  }

  /** Whether the client reads its answers; when it has stopped, the socket closes with 1008. */
  #roomToAnswer(): boolean {
    if (this.#ws.bufferedAmount <= MAX_UNREAD_BYTES) return true;
    this.#end(
      1008,
      new VoxdError(
        'E_SEND_TIMEOUT',
        `the client left more than ${MAX_UNREAD_BYTES} bytes of answers unread`,
      ),
      'the client does not read its answers',
    );
    return false;
  }

  #send(frame: string): void {
    if (this.#ws.readyState !== this.#ws.OPEN || !this.#roomToAnswer()) return;
    this.#ws.send(frame);
  }

  /** Sends a piece of a stream; past the high water the stream waits until the client has read it. */
  #sendPiece(frame: string): Promise<void> | undefined {
    if (this.#ws.readyState !== this.#ws.OPEN || !this.#roomToAnswer()) return undefined;
    if (this.#ws.bufferedAmount + frame.length <= STREAM_HIGH_WATER) {
      this.#ws.send(frame);
      return undefined;
    }
    // The callback comes once this frame, and so all before it, is written out to the socket.
    return new Promise((resolve) => this.#ws.send(frame, () => resolve()));
  }
}

/** A waiting frame's bytes, let go by the frame. */
function takeBytes(frame: { data?: Buffer }): Buffer {
  const bytes = frame.data!;
  frame.data = undefined;
  return bytes;
}
