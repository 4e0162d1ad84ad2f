/**
 * A raw HTTP/1.1 client over one TCP connection, for tests that must send exact bytes (partial
 * heads, chunked bodies cut anywhere) or read slowly, and see exactly how the server answers.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { withDeadline } from './voxd.js';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  /** The body so far, de-chunked. */
  body: Buffer;
  /** The body's framing completed: the terminating zero chunk, or all Content-Length bytes. */
  complete: boolean;
}

/** The response in `raw` so far; undefined until its headers are complete. */
export function parseResponse(raw: Buffer): RawResponse | undefined {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const lines = raw.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(lines[0]!.split(' ')[1]);
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let rest = raw.subarray(end + 4);
  if (headers['transfer-encoding']?.toLowerCase() === 'chunked') {
    const parts: Buffer[] = [];
    let complete = false;
    for (;;) {
      const eol = rest.indexOf('\r\n');
      if (eol < 0) break;
      const size = Number.parseInt(rest.subarray(0, eol).toString('latin1'), 16);
      if (size === 0) {
        complete = rest.indexOf('\r\n\r\n') >= 0;
        break;
      }
      if (rest.length < eol + 2 + size + 2) break;
      parts.push(rest.subarray(eol + 2, eol + 2 + size));
      rest = rest.subarray(eol + 2 + size + 2);
    }
    return { status, headers, body: Buffer.concat(parts), complete };
  }
  const length = Number(headers['content-length'] ?? 0);
  return { status, headers, body: rest.subarray(0, length), complete: rest.length >= length };
}

/** One connection, fed exact bytes; what it receives is kept. */
export class RawClient {
  readonly socket: Socket;
  #raw: Buffer[] = [];
  #size = 0;
  #closed = false;
  readonly #closedPromise: Promise<void>;
  #wake: (() => void) | undefined;

  /** `read: false`: nothing is taken off the socket, so the server's writes back up. */
  constructor(url: string, options: { read?: boolean } = {}) {
    const { port, hostname } = new URL(url);
    this.socket = connect(Number(port), hostname);
    this.socket.setNoDelay(true);
    if (options.read === false) this.socket.pause();
    this.socket.on('data', (d: Buffer) => {
      this.#raw.push(d);
      this.#size += d.length;
      this.#wake?.();
    });
    this.#closedPromise = new Promise((resolve) => {
      this.socket.on('close', () => {
        this.#closed = true;
        this.#wake?.();
        resolve();
      });
    });
    // A reset is one way a server cuts a connection; `closed` and the response tell what happened.
    this.socket.on('error', () => {});
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Bytes received so far. */
  get size(): number {
    return this.#size;
  }

  get raw(): Buffer {
    return Buffer.concat(this.#raw);
  }

  get response(): RawResponse | undefined {
    return parseResponse(this.raw);
  }

  /** Writes raw bytes; resolves once the socket took them (the write callback). */
  write(...parts: (string | Buffer)[]): Promise<void> {
    const bytes = Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : p)));
    return new Promise((resolve, reject) =>
      this.socket.write(bytes, (err) => (err ? reject(err) : resolve())),
    );
  }

  /** Waits (bounded) until `check` holds; fails when the connection closed first. */
  async until(what: string, check: () => boolean, ms = 10000): Promise<void> {
    const wait = async () => {
      while (!check()) {
        if (this.#closed) throw new Error(`connection closed before ${what}: ${this.raw.toString('latin1')}`);
        await new Promise<void>((resolve) => (this.#wake = resolve));
      }
    };
    await withDeadline(wait(), what, ms);
  }

  /** Waits (bounded) for the server to close the connection. */
  async ended(what = 'the server to close the connection', ms = 10000): Promise<void> {
    this.socket.resume();
    await withDeadline(this.#closedPromise, what, ms);
  }

  /** Waits (bounded) for the server to close the connection; returns the whole response. */
  async finished(ms = 10000): Promise<RawResponse> {
    await this.ended('the response and the connection close', ms);
    const res = this.response;
    assert.ok(
      res,
      `no response before the connection closed: ${JSON.stringify(this.raw.toString('latin1'))}`,
    );
    return res;
  }
}
