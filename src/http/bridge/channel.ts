/**
 * One WebSocket of the bridge: its frames are requests to its path, answered one at a time in the
 * order they came (as audio.cpp's bridge does: a client that wants requests side by side opens more
 * sockets, each a connection under max_connections). Everything it holds is bounded: frames
 * waiting behind the running one (MAX_WAITING_FRAMES, and their bytes), and what the client has
 * not read yet (a streamed answer waits for it; past MAX_UNREAD_BYTES the socket closes with 1008).
 * A socket that closes cancels the request running and drops the ones waiting.
 */
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import { VoxdError } from '../../errors.js';
import type { Logger } from '../../observability/logger.js';
import { toHttp } from '../transport/errors.js';
import { type AnswerSink, dispatchInProcess } from './dispatch.js';
import {
  bodyFrame,
  doneFrame,
  errorFrame,
  type FrameId,
  frameId,
  frameObject,
  frameRequest,
  responseFrame,
  startFrame,
} from './frames.js';

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
}

export class BridgeChannel {
  readonly #ws: WebSocket;
  readonly #origin: ChannelOrigin;
  readonly #deps: ChannelDeps;
  readonly #waiting: { text: string; bytes: number }[] = [];
  #waitingBytes = 0;
  #running = false;
  /** Cancels the request running, when the socket closes. */
  #abort = new AbortController();
  #closing = false;
  /** Settles when no request runs (at once when none does). */
  #idle: Promise<void> = Promise.resolve();
  #markIdle: () => void = () => {};

  constructor(ws: WebSocket, origin: ChannelOrigin, deps: ChannelDeps) {
    this.#ws = ws;
    this.#origin = origin;
    this.#deps = deps;
    ws.on('message', (data: Buffer, isBinary: boolean) => this.#receive(data, isBinary));
    ws.on('close', () => {
      this.#closing = true;
      this.#waiting.length = 0;
      this.#waitingBytes = 0;
      this.#abort.abort();
    });
  }

  /** Ends the socket at a shutdown: the request running finishes and is answered, then 1001. */
  async shutdown(): Promise<void> {
    this.#closing = true;
    this.#waiting.length = 0;
    this.#waitingBytes = 0;
    await this.#idle;
    this.#ws.close(1001, 'voxd is shutting down');
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
    const text = data.toString('utf8');
    if (this.#closing) {
      this.#answerError(
        idOf(text),
        new VoxdError('E_SHUTTING_DOWN', 'voxd is shutting down and takes no new requests'),
      );
      return;
    }
    if (
      this.#waiting.length >= MAX_WAITING_FRAMES ||
      this.#waitingBytes + data.length > this.#deps.maxWaitingBytes
    ) {
      this.#answerError(
        idOf(text),
        new VoxdError(
          'E_BRIDGE_BACKLOG',
          `this WebSocket already has ${this.#waiting.length} requests waiting behind the one running; wait for their answers, or open another socket`,
          { retryAfterS: 1 },
        ),
      );
      return;
    }
    this.#waiting.push({ text, bytes: data.length });
    this.#waitingBytes += data.length;
    if (!this.#running) void this.#drain();
  }

  /** Runs the waiting frames one after the other. */
  async #drain(): Promise<void> {
    this.#running = true;
    this.#idle = new Promise((resolve) => {
      this.#markIdle = resolve;
    });
    try {
      for (let frame = this.#waiting.shift(); frame !== undefined; frame = this.#waiting.shift()) {
        this.#waitingBytes -= frame.bytes;
        if (this.#closing || !this.#roomToAnswer()) break;
        await this.#run(frame.text);
      }
    } finally {
      this.#running = false;
      this.#markIdle();
    }
  }

  async #run(text: string): Promise<void> {
    let id: FrameId = null;
    try {
      const frame = frameObject(text);
      id = frameId(frame);
      const request = frameRequest(frame, text);
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
        this.#abort.signal,
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
    this.#closing = true;
    this.#abort.abort();
    this.#ws.close(1008, 'the client does not read its answers');
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

/** The id of a frame for an answer sent without running it; null when the frame has none. */
function idOf(text: string): FrameId {
  try {
    return frameId(frameObject(text));
  } catch {
    return null;
  }
}
