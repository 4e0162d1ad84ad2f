/**
 * The request body of a live-ingest route (POST /v1/audio/transcriptions/live and /v1/audio/speech/live):
 * raw PCM sent with `Transfer-Encoding: chunked`, read as it arrives and bounded by `live_ingest`.
 * The PCM format comes from live-pcm-format.ts. The bytes come from the request's public Readable
 * (its 'data' events, with pause()/resume() for backpressure): node:http de-chunks the body and stays
 * the only judge of its framing; nothing here reads the raw socket or node:http's parser.
 *
 * What is enforced, and how:
 * - `idle_timeout_ms`: the longest gap between payload bytes received from the client while the
 *   reader is taking data (framing alone, a size line or an extension sent byte by byte, does not
 *   count as data). While the consumer lags and the reader holds the body paused (backpressure),
 *   the gap is not counted: the client cannot send then, through no fault of its own.
 * - `total_timeout_ms`: time from openLiveBody() to the terminating chunk, whatever the cause.
 *   Both timeouts run on the Clock passed in (the server's, so a test can move time itself).
 * - `max_body_bytes`: payload bytes (after de-chunking); one byte more fails.
 * - `max_chunk_bytes`: checked on each piece of payload node:http hands over at once (one 'data'
 *   event): a piece larger than the limit fails. node:http does not tell the size a chunk declares
 *   and delivers a chunk in pieces, each within one chunk and one socket read (at most 64 KiB on
 *   node 20), so this is a looser bound than the size line: a chunk over the limit that arrives
 *   over several reads passes, piece by piece, and a declared size is never refused before its
 *   data arrives (node:http refuses a size that does not fit in 64 bits as malformed). With the
 *   default (8 MiB) it never fires; what bounds memory is the backpressure below, whatever sizes
 *   the client declares.
 * - Memory: the reader queues payload until the consumer pulls it, and pauses the request as soon
 *   as its queue holds LIVE_BODY_HIGH_WATER_BYTES (1 MiB), so it never holds more than that plus one
 *   piece (bytesBuffered). A paused request buffers at most its readableHighWaterMark (16 KiB on
 *   node 20, 64 KiB from node 22) plus the rest of the socket read in progress before node:http
 *   stops reading the socket; the rest waits in the kernel and, past its buffers, in the client.
 *   A huge chunk, or a fast stream to a slow consumer, costs the server about 1.2 MiB at most
 *   (test/http/live/body.test.ts, "memory stays bounded", checks this bound).
 * - Malformed framing fails with the reason of node:http's parse error (code HPE_*): seen on the
 *   socket's 'error' when node:http destroys the connection with it (its default clientError
 *   handling), or passed in by reportClientError() from a server's own 'clientError' handler that
 *   keeps the connection open to report it (voxd's does, for a streamed answer).
 * - A body cut off before the terminating zero-length chunk (half-close, close, reset) fails: a
 *   truncated body never ends the iteration normally.
 * - The AbortSignal (the client-gone signal of the route) fails the iteration with its reason.
 * Every failure is a VoxdError naming the limit and its value: 400 E_INVALID_REQUEST (timeouts,
 * malformed framing, truncation, a partial last frame), 413 E_BODY_TOO_LARGE (max_body_bytes,
 * max_chunk_bytes), 413 E_AUDIO_TOO_LONG (max_audio_seconds), 499 E_CLIENT_GONE (the client left
 * after a whole body), or the signal's own reason. A failure is reported at the next pull, at
 * once: audio received but not yet yielded is dropped. All listeners and timers are removed on
 * every path (end, failure, close()); the request is paused after a failure, and close() resumes
 * it with no reader, so that what the client still sends is dropped rather than left unread (the
 * connection then closes lingering: src/http/transport/lingering-close.ts).
 *
 * Not enforced here: node:http's own server.requestTimeout (300 s by default) also bounds the whole
 * request, body included, and destroys the connection when it runs out; a server with live routes
 * must lift it (0) or set it above every total_timeout_ms, or long live bodies are cut at 300 s.
 *
 * Audio comes out as Audio objects with interleaved samples and the client's channel count (use
 * src/audio/convert.ts to downmix or resample). A yield holds only whole frames (a sample, or a
 * frame of several channels, split across chunks is carried to the next yield); a body that ends
 * with a partial frame fails (400) after the whole frames before it were yielded, since it means
 * the client's sample format or channel count is not what it declared.
 */
import type { IncomingMessage } from 'node:http';
import { decodePcm } from '../../audio/pcm.js';
import type { Audio } from '../../audio/types.js';
import type { LiveIngestConfig } from '../../config/types.js';
import { invalidRequest, showValue, VoxdError } from '../../errors.js';
import { type Clock, systemClock, type Timer } from '../../util/clock.js';
import { lingerOnClose } from '../transport/lingering-close.js';
import { type LivePcmFormat, pcmEncoding } from './pcm-format.js';

// ---- limits ----

/**
 * A 400 unless the body comes with `Transfer-Encoding: chunked` as its single coding (tokens are
 * case-insensitive). `label` names the route: "live transcription", "live speech".
 */
export function requireChunkedBody(req: IncomingMessage, label = 'live ingest'): void {
  const te = req.headers['transfer-encoding'];
  if (te !== undefined && te.trim().toLowerCase() === 'chunked') return;
  const got = te === undefined ? 'no Transfer-Encoding' : `Transfer-Encoding ${showValue(te)}`;
  throw invalidRequest(
    `${label} requires an incrementally delivered (chunked) request body: send raw PCM with ` +
      `Transfer-Encoding: chunked (got ${got})`,
  );
}

// ---- the reader ----

export interface LiveBodyOptions {
  format: LivePcmFormat;
  /**
   * The effective limits (see liveIngestLimits); 0 disables idle_timeout_ms, total_timeout_ms and
   * max_body_bytes (max_chunk_bytes is >= 1 by config; 0 is taken as no limit). send_timeout_ms is
   * the response writer's (EventStream).
   */
  limits: Omit<LiveIngestConfig, 'send_timeout_ms'>;
  /** Fails the iteration with its reason when it fires (pass the route's client-gone signal). */
  signal?: AbortSignal;
  /** Names the route in the 400 for a body that is not chunked (see requireChunkedBody). */
  label?: string;
  /** max_audio_seconds (the server's or the model's): more audio than this fails with 413; 0 = none. */
  maxAudioSeconds?: number;
  /** Runs the timeouts and dates `completedAt` (pass the server's); the system clock by default. */
  clock?: Clock;
}

export interface LiveBody extends AsyncIterable<Audio> {
  readonly format: LivePcmFormat;
  /** Payload bytes received so far (after de-chunking), including any not yet yielded. */
  readonly bytesReceived: number;
  /**
   * Payload bytes held now: received but not yet yielded (queued, plus a partial frame carried to
   * the next yield). Below LIVE_BODY_HIGH_WATER_BYTES plus one delivered piece (module comment).
   */
  readonly bytesBuffered: number;
  /** The clock's now() when the body completed (terminating chunk), undefined before. */
  readonly completedAt: number | undefined;
  /**
   * Stops reading: removes every listener and timer, pauses the request, drops what is queued; a
   * waiting or later next() reports the end. Idempotent; breaking out of `for await` calls it.
   */
  close(): void;
}

/**
 * Starts reading a live body. Throws the 400 of requireChunkedBody at once; every other failure
 * comes out of the iteration. It may be called in the request handler or later (the request holds
 * what arrives meanwhile, paused). One consumer: each [Symbol.asyncIterator]() call returns the
 * same iterator. Whatever happens, call close() (or finish the iteration) when done.
 */
export function openLiveBody(req: IncomingMessage, options: LiveBodyOptions): LiveBody {
  requireChunkedBody(req, options.label);
  // The answer of a live route can end while the client still sends: its connection lingers.
  if (req.socket) lingerOnClose(req.socket, options.clock ?? systemClock);
  return new LiveBodyReader(req, options);
}

/**
 * Queued payload at which the reader pauses the request until the consumer pulls (backpressure):
 * the reader never holds more than this plus one piece node:http delivered.
 */
export const LIVE_BODY_HIGH_WATER_BYTES = 1 << 20;

/** The handler of the live body being read on a socket, for node:http's parse errors. */
const clientErrorSinks = new WeakMap<object, (err: Error) => void>();

/**
 * node:http's parser failed on `socket` (the server's 'clientError' event): the live body being
 * read on it, if any, fails at once with the parse error's reason (a 400 naming the HPE_ code).
 * A 'clientError' handler that does not destroy the socket with the error (one that keeps the
 * connection so that a streamed answer can report the problem) must call this, or the reader
 * learns of the error only when the connection closes, as a truncated body. Does nothing for a
 * socket with no live body in progress.
 */
export function reportClientError(socket: object, err: Error): void {
  clientErrorSinks.get(socket)?.(err);
}

interface Waiter {
  resolve(result: IteratorResult<Audio>): void;
  reject(err: unknown): void;
}

class LiveBodyReader implements LiveBody {
  readonly format: LivePcmFormat;
  bytesReceived = 0;
  completedAt: number | undefined;

  readonly #req: IncomingMessage;
  readonly #socket: IncomingMessage['socket'];
  readonly #limits: LiveBodyOptions['limits'];
  readonly #signal: AbortSignal | undefined;
  readonly #clock: Clock;
  readonly #bytesPerSample: number;
  readonly #frameBytes: number;
  readonly #maxAudioSeconds: number;
  /** Payload bytes that hold max_audio_seconds of audio (infinite without a limit). */
  readonly #maxAudioBytes: number;

  #queue: Buffer[] = [];
  #queuedBytes = 0;
  #carry: Buffer = Buffer.alloc(0);
  #complete = false;
  #closed = false;
  #error: unknown;
  #waiter: Waiter | undefined;
  #paused = false;
  #attached = false;
  #idleTimer: Timer | undefined;
  #totalTimer: Timer | undefined;
  readonly #iterator: AsyncIterableIterator<Audio>;

  constructor(req: IncomingMessage, options: LiveBodyOptions) {
    this.#req = req;
    this.#socket = req.socket;
    this.format = { ...options.format };
    this.#limits = { ...options.limits };
    this.#signal = options.signal;
    this.#clock = options.clock ?? systemClock;
    this.#bytesPerSample = this.format.sampleFormat === 'f32le' ? 4 : 2;
    this.#frameBytes = this.#bytesPerSample * this.format.channels;
    this.#maxAudioSeconds = options.maxAudioSeconds ?? 0;
    this.#maxAudioBytes =
      this.#maxAudioSeconds > 0
        ? this.#maxAudioSeconds * this.format.sampleRate * this.#frameBytes
        : Number.POSITIVE_INFINITY;
    this.#iterator = {
      next: () => this.#next(),
      return: async () => {
        this.close();
        return { value: undefined, done: true };
      },
      [Symbol.asyncIterator]() {
        return this;
      },
    };

    this.#attach();
    if (this.#signal?.aborted) this.#fail(abortReason(this.#signal));
  }

  get bytesBuffered(): number {
    return this.#carry.length + this.#queuedBytes;
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<Audio> {
    return this.#iterator;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#detach();
    this.#dropQueue();
    // Whatever the client still sends is read and dropped from here, not left unread: the answer is
    // about to end with the connection, and unread bytes would turn its close into a reset that can
    // cost the client the answer (src/http/transport/lingering-close.ts bounds how long this goes on).
    if (!this.#req.destroyed && !this.#req.complete) this.#req.resume();
    this.#settle();
  }

  // ---- wiring ----

  #attach(): void {
    this.#attached = true;
    const req = this.#req;
    req.on('data', this.#onData);
    req.on('end', this.#onEnd);
    req.on('error', this.#onRequestGone);
    req.on('close', this.#onRequestGone);
    const socket = this.#socket;
    if (socket) {
      clientErrorSinks.set(socket, this.#onSocketError);
      socket.on('error', this.#onSocketError);
      socket.on('end', this.#onSocketEnd);
      socket.on('close', this.#onSocketEnd);
    }
    this.#signal?.addEventListener('abort', this.#onAbort);
    const total = this.#limits.total_timeout_ms;
    if (total > 0) {
      this.#totalTimer = this.#clock.after(total, () =>
        this.#fail(
          invalidRequest(`live body: not complete after ${total} ms (live_ingest.total_timeout_ms)`),
        ),
      );
    }
    this.#armIdle();
  }

  #detach(): void {
    if (!this.#attached) return;
    this.#attached = false;
    this.#idleTimer?.cancel();
    this.#totalTimer?.cancel();
    this.#idleTimer = undefined;
    this.#totalTimer = undefined;
    const req = this.#req;
    req.off('data', this.#onData);
    req.off('end', this.#onEnd);
    req.off('error', this.#onRequestGone);
    req.off('close', this.#onRequestGone);
    const socket = this.#socket;
    if (socket) {
      if (clientErrorSinks.get(socket) === this.#onSocketError) clientErrorSinks.delete(socket);
      socket.off('error', this.#onSocketError);
      socket.off('end', this.#onSocketEnd);
      socket.off('close', this.#onSocketEnd);
    }
    this.#signal?.removeEventListener('abort', this.#onAbort);
  }

  #armIdle(): void {
    const idle = this.#limits.idle_timeout_ms;
    if (idle <= 0 || !this.#attached || this.#paused) return;
    // Started again from now: a Clock's timer has no refresh().
    this.#idleTimer?.cancel();
    this.#idleTimer = this.#clock.after(idle, () =>
      this.#fail(invalidRequest(`live body: no data for ${idle} ms (live_ingest.idle_timeout_ms)`)),
    );
  }

  #pauseRequest(): void {
    if (!this.#req.destroyed) this.#req.pause();
  }

  // ---- events ----

  /**
   * A piece of payload, as node:http decoded it: part of one chunk, from one socket read (its
   * size is what max_chunk_bytes can be checked on; see the module comment).
   */
  readonly #onData = (piece: Buffer): void => {
    if (!this.#attached) return;
    this.#armIdle();
    this.bytesReceived += piece.length;
    const maxChunk = this.#limits.max_chunk_bytes;
    if (maxChunk > 0 && piece.length > maxChunk) {
      this.#fail(
        new VoxdError(
          'E_BODY_TOO_LARGE',
          `live body: a chunk of at least ${piece.length} bytes is larger than ${maxChunk} (live_ingest.max_chunk_bytes)`,
        ),
      );
      return;
    }
    const maxBody = this.#limits.max_body_bytes;
    if (maxBody > 0 && this.bytesReceived > maxBody) {
      this.#fail(
        new VoxdError(
          'E_BODY_TOO_LARGE',
          `live body: more than ${maxBody} bytes (live_ingest.max_body_bytes)`,
        ),
      );
      return;
    }
    if (this.bytesReceived > this.#maxAudioBytes) {
      this.#fail(
        new VoxdError(
          'E_AUDIO_TOO_LONG',
          `live body: more than ${this.#maxAudioSeconds} s of audio (max_audio_seconds, server or model)`,
        ),
      );
      return;
    }
    this.#queue.push(piece);
    this.#queuedBytes += piece.length;
    if (this.#queuedBytes >= LIVE_BODY_HIGH_WATER_BYTES && !this.#paused) {
      this.#paused = true;
      this.#idleTimer?.cancel();
      this.#idleTimer = undefined;
      this.#pauseRequest();
    }
    this.#settle();
  };

  /** node:http saw the terminating chunk (and any trailers): the body is whole. */
  readonly #onEnd = (): void => {
    if (!this.#attached) return;
    this.#complete = true;
    this.completedAt = this.#clock.now();
    this.#detach();
    this.#settle();
  };

  readonly #onRequestGone = (): void => {
    if (!this.#attached) return;
    if (this.#req.complete) {
      // The body was whole, but the request was destroyed (the client left) before it was read.
      this.#fail(new VoxdError('E_CLIENT_GONE', 'live body: the client closed the connection'));
    } else this.#fail(this.#truncated());
  };

  readonly #onSocketError = (err: Error & { code?: unknown }): void => {
    if (!this.#attached) return;
    const code = typeof err.code === 'string' ? err.code : '';
    if (code.startsWith('HPE_') && code !== 'HPE_INVALID_EOF_STATE') {
      const reason = (err as { reason?: unknown }).reason;
      const detail = typeof reason === 'string' && reason !== '' ? reason : err.message;
      this.#fail(invalidRequest(`live body: malformed chunked framing: ${detail} (${code})`));
    } else if (!this.#req.complete) {
      this.#fail(this.#truncated(code === '' || code === 'HPE_INVALID_EOF_STATE' ? undefined : code));
    }
  };

  readonly #onSocketEnd = (): void => {
    // A whole body followed by a half-close is fine: node:http still ends the request.
    if (this.#attached && !this.#req.complete) this.#fail(this.#truncated());
  };

  readonly #onAbort = (): void => {
    if (this.#signal) this.#fail(abortReason(this.#signal));
  };

  // ---- outcomes ----

  #truncated(code?: string): VoxdError {
    return invalidRequest(
      `live body: the connection closed before the terminating zero-length chunk` +
        ` (${this.bytesReceived} bytes received${code ? `, ${code}` : ''})`,
    );
  }

  /** The first failure wins; later ones (the parse error after ours, the close after it) are dropped. */
  #fail(err: unknown): void {
    if (this.#closed || this.#error !== undefined || this.#complete) return;
    this.#error = err;
    this.#detach();
    this.#dropQueue();
    this.#pauseRequest();
    this.#settle();
  }

  #dropQueue(): void {
    this.#queue = [];
    this.#queuedBytes = 0;
    this.#carry = Buffer.alloc(0);
  }

  // ---- iteration ----

  #next(): Promise<IteratorResult<Audio>> {
    if (this.#waiter) return Promise.reject(new Error('live body: next() called while a call is pending'));
    return new Promise((resolve, reject) => {
      this.#waiter = { resolve, reject };
      this.#settle();
    });
  }

  /** Answers the waiting next(), if it can be answered now. */
  #settle(): void {
    const waiter = this.#waiter;
    if (!waiter) return;
    let result: IteratorResult<Audio> | undefined;
    try {
      result = this.#take();
    } catch (err) {
      this.#waiter = undefined;
      waiter.reject(err);
      return;
    }
    if (result) {
      this.#waiter = undefined;
      waiter.resolve(result);
    }
  }

  #take(): IteratorResult<Audio> | undefined {
    if (this.#closed) return { value: undefined, done: true };
    if (this.#error !== undefined) throw this.#error;
    const available = this.#carry.length + this.#queuedBytes;
    if (available >= this.#frameBytes) return { value: this.#decodeQueued(available), done: false };
    if (!this.#complete) return undefined;
    // Less than a frame left, whether carried from the last yield or queued since (a last chunk
    // shorter than a frame, arriving after the previous yield was taken).
    if (available > 0) {
      const stray = available;
      this.#dropQueue();
      this.#error = invalidRequest(
        `live body: the body ends with ${stray} bytes that are not a whole frame` +
          ` (${this.#frameBytes} bytes: ${this.format.channels} channel(s) of ${this.format.sampleFormat})`,
      );
      throw this.#error;
    }
    return { value: undefined, done: true };
  }

  /** Every whole frame queued, as one Audio; a partial frame stays behind for the next chunk. */
  #decodeQueued(available: number): Audio {
    const whole = available - (available % this.#frameBytes);
    const parts = this.#carry.length > 0 ? [this.#carry, ...this.#queue] : this.#queue;
    const bytes = parts.length === 1 ? parts[0]! : Buffer.concat(parts, available);
    this.#carry = whole < available ? Buffer.from(bytes.subarray(whole)) : Buffer.alloc(0);
    this.#queue = [];
    this.#queuedBytes = 0;
    if (this.#paused) {
      this.#paused = false;
      if (this.#attached) {
        this.#req.resume();
        this.#armIdle();
      }
    }
    return {
      samples: decodePcm(bytes.subarray(0, whole), pcmEncoding(this.format)),
      sampleRate: this.format.sampleRate,
      channels: this.format.channels,
    };
  }
}

function abortReason(signal: AbortSignal): unknown {
  const reason: unknown = signal.reason;
  if (reason instanceof Error) return reason;
  return new VoxdError('E_CLIENT_GONE', 'live body: aborted', { cause: reason });
}
