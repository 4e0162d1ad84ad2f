/**
 * A raw `ws` client for the WebSocket routes' tests (realtime sessions, audio.cpp's bridge): the
 * socket's JSON messages as they come, waits for the one a test expects, and an upgrade's refusal
 * read as the HTTP answer it is.
 */
import { WebSocket } from 'ws';

// biome-ignore lint/suspicious/noExplicitAny: messages are checked as plain JSON
export type Message = any;

/** A socket's JSON messages as they come, and waits for one. */
export class Messages {
  readonly all: Message[] = [];
  readonly #waiters = new Set<() => void>();

  push(message: Message): void {
    this.all.push(message);
    for (const wake of [...this.#waiters]) wake();
  }

  /**
   * The first message after the `seen` first ones that `matches` (a `type`, or a test), waiting for
   * it `timeoutMs` at most.
   */
  next(matches: string | ((m: Message) => boolean), seen = 0, timeoutMs = 5000): Promise<Message> {
    const test = typeof matches === 'string' ? (m: Message) => m.type === matches : matches;
    return this.#wait(() => this.all.slice(seen).find(test), String(matches), timeoutMs);
  }

  /** The `n`th message (0 first) of `type`, waiting for it `timeoutMs` at most. */
  nth(type: string, n: number, timeoutMs = 5000): Promise<Message> {
    return this.#wait(() => this.all.filter((m) => m.type === type)[n], `${type} #${n}`, timeoutMs);
  }

  types(): string[] {
    return this.all.map((m) => m.type);
  }

  #wait(find: () => Message, what: string, timeoutMs: number): Promise<Message> {
    return new Promise((resolve, reject) => {
      const look = () => {
        const found = find();
        if (found === undefined) return;
        this.#waiters.delete(look);
        clearTimeout(timer);
        resolve(found);
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(look);
        reject(new Error(`no ${what}; got ${this.types().join(' ')}`));
      }, timeoutMs);
      this.#waiters.add(look);
      look();
    });
  }
}

export interface Socket {
  ws: WebSocket;
  messages: Messages;
  /** Sends a message as JSON (a string as it is). */
  send(message: unknown): void;
  /** Resolves with the close code once the socket is closed. */
  closed: Promise<number>;
}

export interface SocketOptions {
  headers?: Record<string, string>;
  protocols?: string[];
  /** The CA to trust for wss:// (the committed test certificate). */
  ca?: Buffer;
}

/**
 * Opens `url` (http(s) or ws(s)); resolves once open, or rejects with the refusal's `status` and
 * `body` when the upgrade is answered over HTTP.
 */
export function openSocket(url: string, options: SocketOptions = {}): Promise<Socket> {
  const ws = new WebSocket(url.replace(/^http/, 'ws'), options.protocols ?? [], {
    headers: options.headers,
    ca: options.ca,
  });
  const messages = new Messages();
  ws.on('message', (data) => messages.push(JSON.parse(data.toString())));
  const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    ws.on('open', () =>
      resolve({
        ws,
        messages,
        closed,
        send: (message) => ws.send(typeof message === 'string' ? message : JSON.stringify(message)),
      }),
    );
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => {
        body += chunk;
      });
      res.on('end', () =>
        reject(Object.assign(new Error(`refused ${res.statusCode}`), { status: res.statusCode, body })),
      );
    });
    ws.on('error', reject);
  });
}

/** The HTTP refusal of an upgrade: its status and error body; fails if the upgrade is accepted. */
export async function refusal(
  url: string,
  options?: SocketOptions,
): Promise<{ status: number; error: Message }> {
  const err = await openSocket(url, options).then(
    ({ ws }) => {
      ws.close();
      throw new Error(`${url} was accepted`);
    },
    (e: { status?: number; body?: string }) => e,
  );
  if (!err.status) throw new Error(`an HTTP refusal, not ${String(err)}`);
  return { status: err.status, error: JSON.parse(err.body!).error };
}
