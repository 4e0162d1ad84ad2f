/**
 * A streamed response: Server-Sent Events (`data: <json>` frames ending with `data: [DONE]`) or
 * raw audio bytes, over chunked transfer. A write resolves at once while the response's buffer
 * holds at most STREAM_BUFFER_BYTES, and otherwise once the socket drained, bounded by the send
 * timeout: the caller (and through it the engine, see streamed-inference.ts) waits for a slow
 * client instead of queueing the answer in memory, and a client that stops reading cannot hold a
 * slot forever. A failure after the headers went out becomes an SSE `error` event (no `[DONE]`),
 * or cuts a raw stream short.
 */
import type { ServerResponse } from 'node:http';
import { describeError, VoxdError } from '../../errors.js';
import { streamBodyStarted } from './half-close.js';

export type StreamFormat = 'sse' | 'audio';

/**
 * The most bytes a stream leaves in its response's buffer before a write waits for 'drain'. Above
 * node's 16 KB high-water mark, so the engine's next piece is made while the last ones go out (a
 * sentence of speech is 20-100 KB), and small enough that a slow client holds little in the server.
 */
export const STREAM_BUFFER_BYTES = 256 * 1024;

export class EventStream {
  #started = false;
  #ended = false;
  #wrote = false;

  constructor(
    private readonly res: ServerResponse,
    readonly format: StreamFormat,
    /** The longest a write may wait for the client to take the bytes; 0 waits without limit. */
    private readonly sendTimeoutMs: number,
    private readonly signal: AbortSignal,
  ) {}

  get started(): boolean {
    return this.#started;
  }

  /** Sends the 200 and the stream's headers (once). */
  start(extraHeaders: Record<string, string> = {}): void {
    if (this.#started) return;
    this.#started = true;
    const headers: Record<string, string> = { 'Cache-Control': 'no-cache', ...extraHeaders };
    if (this.format === 'sse') {
      headers['Content-Type'] = 'text/event-stream; charset=utf-8';
      headers['X-Accel-Buffering'] = 'no';
    } else headers['Content-Type'] ??= 'application/octet-stream';
    this.res.writeHead(200, headers);
    // Headers out now, not with the first event: a client sees the stream is accepted at once.
    this.res.flushHeaders();
  }

  /** One SSE event. */
  event(data: object): Promise<void> {
    return this.#write(`data: ${JSON.stringify(data)}\n\n`);
  }

  /** One SSE event already framed (`data: <json>\n\n`), shared by several streams. */
  frame(bytes: Buffer): Promise<void> {
    return this.#write(bytes);
  }

  /** An SSE comment line (a heartbeat): clients ignore it, proxies see the stream is alive. */
  comment(text: string): Promise<void> {
    return this.#write(`: ${text.replace(/[\r\n]/g, ' ')}\n\n`);
  }

  /** Raw bytes (the `audio` format). */
  bytes(chunk: Buffer): Promise<void> {
    return this.#write(chunk);
  }

  /**
   * HTTP trailers, sent after the last chunk when the stream ends (a raw stream's timing, known only
   * then); the headers must have named them in `Trailer`.
   */
  trailers(headers: Record<string, string>): void {
    if (!this.#ended && !this.res.destroyed) this.res.addTrailers(headers);
  }

  /** Ends a successful stream: `data: [DONE]` for SSE. */
  async done(): Promise<void> {
    if (this.format === 'sse') await this.#write('data: [DONE]\n\n');
    this.#end();
  }

  /**
   * Ends a failed stream. Before the headers went out nothing is written (the caller answers with a
   * plain error). An SSE stream gets an `error` event and no `[DONE]`; a raw one is cut off, so
   * the client sees an incomplete body rather than a short file that looks whole.
   */
  async fail(err: unknown): Promise<void> {
    if (!this.#started || this.#ended) return;
    if (this.format === 'sse' && !this.signal.aborted) {
      const { error } = describeError(err);
      try {
        await this.#write(`data: ${JSON.stringify({ type: 'error', error })}\n\n`);
        this.#end();
        return;
      } catch {
        // The client is gone or not reading: nothing more can be said.
      }
    }
    this.#ended = true;
    this.res.destroy();
  }

  #end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.res.end();
  }

  async #write(chunk: string | Buffer): Promise<void> {
    this.start();
    if (this.signal.aborted) throw this.signal.reason;
    // A batch whose other items still run when the stream failed and ended would write after the
    // end, which node reports as an 'error' event on the response; refused here instead.
    if (this.#ended) throw new VoxdError('E_INTERNAL', 'stream: write after the stream ended');
    // A destroyed response takes no bytes and never drains: the write must not seem to succeed.
    if (this.res.destroyed) throw new VoxdError('E_CLIENT_GONE', 'client closed the connection');
    this.res.write(chunk);
    if (!this.#wrote) {
      this.#wrote = true;
      streamBodyStarted(this.res);
    }
    // 'drain' comes once the buffer is empty; it is due whenever the buffer passed the high-water
    // mark, which this bound is above.
    if (this.res.writableLength <= STREAM_BUFFER_BYTES || !this.res.writableNeedDrain) return;
    await new Promise<void>((resolve, reject) => {
      const timer =
        this.sendTimeoutMs > 0
          ? setTimeout(() => {
              cleanup();
              const err = new VoxdError(
                'E_CLIENT_GONE',
                `the client did not read the stream for ${this.sendTimeoutMs} ms (live_ingest.send_timeout_ms)`,
              );
              this.res.destroy(err);
              reject(err);
            }, this.sendTimeoutMs)
          : undefined;
      const onDrain = () => {
        cleanup();
        resolve();
      };
      const onAbort = () => {
        cleanup();
        reject(this.signal.reason);
      };
      const cleanup = () => {
        clearTimeout(timer);
        this.res.off('drain', onDrain);
        this.signal.removeEventListener('abort', onAbort);
      };
      this.res.on('drain', onDrain);
      this.signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}
