/**
 * Runs one bridged request through voxd's own HTTP server, in process: the request is written by
 * node's HTTP client onto one end of an in-memory connection whose other end is handed to the
 * server as an accepted connection (`inject`), and the answer is read back by that client.
 *
 * Why this way: the request then takes exactly the path an HTTP request takes (routing, keys and
 * scopes, body limits and budget, per-model FIFO slots, busy timeouts, management barriers,
 * request ids, logs and metrics), with node's own parser on both sides, so the bridge cannot drift
 * from HTTP and holds no copy of any of it. Calling the handler with hand-made request/response
 * objects would need the same framing re-implemented; a loopback TCP (or TLS) request to voxd's
 * listener would count against max_connections, show every caller as 127.0.0.1, and go through
 * TLS to itself under HTTPS. Destroying the in-memory connection is a client leaving: the server
 * cancels the request and frees its slot as for a dropped TCP connection.
 */
import { type ClientRequest, request as httpRequest, type IncomingMessage, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { VoxdError } from '../../errors.js';
import { SLICE_BYTES } from '../../util/json-reader.js';
import { duplexPair } from './duplex-pair.js';
import { isText, type ResponseHead } from './frames.js';

export interface InProcessRequest {
  method: string;
  /** Path and query, as in a request line. */
  target: string;
  headers: Record<string, string>;
  /** The body in pieces, written a slice at a time. */
  body: Uint8Array[] | undefined;
  /** The WebSocket client's address, which the server reads as the request's. */
  remoteAddress: string | undefined;
}

/** Where the answer goes, as it arrives. */
export interface AnswerSink {
  /** An answer with a Content-Length (or none to have): sent whole. */
  whole(head: ResponseHead, body: Buffer): void;
  /** A streamed answer (chunked: SSE, raw audio) begins. */
  start(head: ResponseHead): void;
  /** A piece of it: text decoded to whole characters, other bytes as they are. A promise holds the next piece back until it settles. */
  piece(piece: string | Buffer): Promise<void> | undefined;
  done(): void;
  /** The stream was cut after its start (the server dropped it, as it does a failed raw stream). */
  cut(): void;
}

/** Response headers that describe the connection or the framing, not the answer. */
const FRAMING = new Set(['content-type', 'content-length', 'transfer-encoding', 'connection', 'keep-alive']);

function headOf(res: IncomingMessage): ResponseHead {
  const headers: Record<string, string> = {};
  // rawHeaders keeps the server's spelling (X-AudioCPP-RTF), as audio.cpp's bridge reports it.
  for (let i = 0; i < res.rawHeaders.length; i += 2) {
    const name = res.rawHeaders[i]!;
    if (FRAMING.has(name.toLowerCase())) continue;
    const value = res.rawHeaders[i + 1]!;
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  return { status: res.statusCode ?? 500, content_type: res.headers['content-type'] ?? '', headers };
}

/** Whether the answer is whole once read: it says its length, or can have no body. */
function isWhole(res: IncomingMessage, method: string): boolean {
  const status = res.statusCode ?? 0;
  return (
    res.headers['content-length'] !== undefined ||
    method === 'HEAD' ||
    status === 204 ||
    status === 304 ||
    status < 200
  );
}

/**
 * Sends `request` through the server and feeds its answer to `sink`; resolves when the answer is
 * over, however it ends. `signal` cancels it (the WebSocket closed): the connection is destroyed
 * and nothing more reaches the sink. A connection the server drops before answering rejects.
 */
export function dispatchInProcess(
  request: InProcessRequest,
  inject: (socket: Duplex) => void,
  sink: AnswerSink,
  signal: AbortSignal,
): Promise<void> {
  const [client, server] = duplexPair();
  server.remoteAddress = request.remoteAddress;
  return new Promise<void>((resolve, reject) => {
    let settled = false;
    const settle = (err?: unknown) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', cancel);
      // Both ends go, whatever the server left open: nothing outlives the request.
      client.destroy();
      if (err === undefined) resolve();
      else reject(err);
    };
    const cancel = () => settle();
    if (signal.aborted) return settle();
    signal.addEventListener('abort', cancel, { once: true });
    inject(server);
    const headers: Record<string, string> = { ...request.headers, connection: 'close' };
    if (request.body !== undefined)
      headers['content-length'] = String(request.body.reduce((sum, piece) => sum + piece.length, 0));
    const outgoing = httpRequest({
      method: request.method,
      path: request.target,
      headers,
      setHost: false,
      createConnection: () => client,
    });
    let answered = false;
    // Once the answer has begun, its own events say how it ended (a cut stream is the sink's `cut`).
    outgoing.on('error', () => {
      if (answered) return settle();
      settle(
        new VoxdError(
          'E_INTERNAL',
          `the in-process connection for ${request.method} ${request.target} closed before its answer`,
        ),
      );
    });
    outgoing.on('response', (res) => {
      answered = true;
      readAnswer(res, request.method, sink, signal, settle);
    });
    void writeBody(outgoing, request.body ?? [], signal);
  });
}

/**
 * Feeds an answer to `sink` as it arrives and calls `settle` once it is over, however it ends:
 * with an error for a whole answer cut short (a cut stream is the sink's `cut`). Nothing reaches
 * the sink once `signal` has aborted.
 */
function readAnswer(
  res: IncomingMessage,
  method: string,
  sink: AnswerSink,
  signal: AbortSignal,
  settle: (err?: unknown) => void,
): void {
  res.on('error', () => {});
  const answer: Answer = { res, head: headOf(res), sink, signal, settle };
  if (isWhole(res, method)) readWhole(answer);
  else readStreamed(answer);
}

/** An answer being read, and where it goes. */
interface Answer {
  res: IncomingMessage;
  head: ResponseHead;
  sink: AnswerSink;
  signal: AbortSignal;
  settle: (err?: unknown) => void;
}

function readWhole({ res, head, sink, signal, settle }: Answer): void {
  const chunks: Buffer[] = [];
  res.on('data', (chunk: Buffer) => chunks.push(chunk));
  res.on('end', () => {
    if (!signal.aborted) sink.whole(head, Buffer.concat(chunks));
    settle();
  });
  res.on('close', () => {
    if (!res.complete)
      settle(new VoxdError('E_INTERNAL', `${STATUS_CODES[head.status] ?? head.status} answer cut short`));
  });
}

function readStreamed({ res, head, sink, signal, settle }: Answer): void {
  sink.start(head);
  const text = isText(head.content_type) ? new StringDecoder('utf8') : undefined;
  res.on('data', (chunk: Buffer) => {
    if (signal.aborted) return;
    const piece = text ? text.write(chunk) : chunk;
    if (piece.length === 0) return;
    const wait = sink.piece(piece);
    if (wait) {
      res.pause();
      void wait.then(() => res.resume());
    }
  });
  res.on('end', () => {
    const rest = text?.end();
    if (!signal.aborted) {
      if (rest) sink.piece(rest);
      sink.done();
    }
    settle();
  });
  res.on('close', () => {
    if (res.complete) return;
    if (!signal.aborted) sink.cut();
    settle();
  });
}

/**
 * Writes a body a slice at a time with the event loop turning in between: the in-memory connection
 * hands each write to the server's reader within the same tick, so a body written whole was read,
 * parsed and copied in one piece of main-thread work (8 MiB: 40-50 ms).
 */
async function writeBody(outgoing: ClientRequest, pieces: Uint8Array[], signal: AbortSignal): Promise<void> {
  let first = true;
  for (const piece of pieces)
    for (let at = 0; at < piece.length; at += SLICE_BYTES) {
      if (!first) await nextTurn();
      first = false;
      if (signal.aborted || outgoing.destroyed) return;
      outgoing.write(piece.subarray(at, at + SLICE_BYTES));
    }
  outgoing.end();
}
