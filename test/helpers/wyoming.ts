/**
 * A Wyoming client written from the protocol's description (shared/reference/realtime-and-wyoming.md
 * §4.1, the `wyoming` library's event.py), not from voxd's reader: a JSON header line, then
 * `data_length` bytes of JSON data merged over the header's `data`, then `payload_length` bytes of
 * payload. It writes events as the library does (data in its own block) and reads what comes back.
 */
import { connect, type Socket } from 'node:net';

export interface ClientEvent {
  type: string;
  // biome-ignore lint/suspicious/noExplicitAny: events are read as plain JSON
  data: Record<string, any>;
  payload?: Buffer;
}

export class WyomingClient {
  readonly events: ClientEvent[] = [];
  readonly closed: Promise<void>;
  #buffer = Buffer.alloc(0);
  readonly #waiters = new Set<() => void>();

  private constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.#buffer = Buffer.concat([this.#buffer, chunk]);
      this.#parse();
    });
    this.closed = new Promise((resolve) => socket.on('close', () => resolve()));
    // A write after voxd ended the connection (EPIPE, a reset) only ends it here too.
    socket.on('error', () => undefined);
    socket.on('close', () => {
      for (const wake of [...this.#waiters]) wake();
    });
  }

  static open(port: number, host = '127.0.0.1'): Promise<WyomingClient> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, host, () => resolve(new WyomingClient(socket)));
      socket.once('error', reject);
    });
  }

  #parse(): void {
    for (;;) {
      const newline = this.#buffer.indexOf(0x0a);
      if (newline < 0) return;
      const header = JSON.parse(this.#buffer.subarray(0, newline).toString('utf8'));
      const dataLength = header.data_length ?? 0;
      const payloadLength = header.payload_length ?? 0;
      const end = newline + 1 + dataLength + payloadLength;
      if (this.#buffer.length < end) return;
      const data = { ...(header.data ?? {}) };
      if (dataLength > 0)
        Object.assign(
          data,
          JSON.parse(this.#buffer.subarray(newline + 1, newline + 1 + dataLength).toString('utf8')),
        );
      const event: ClientEvent = { type: header.type, data };
      if (payloadLength > 0)
        event.payload = Buffer.from(this.#buffer.subarray(newline + 1 + dataLength, end));
      this.#buffer = this.#buffer.subarray(end);
      this.events.push(event);
      for (const wake of [...this.#waiters]) wake();
    }
  }

  /** Writes one event the way the library's writer does. */
  send(type: string, data: Record<string, unknown> = {}, payload?: Buffer): void {
    this.socket.write(frameOf(type, data, payload));
  }

  /** The first event of `type` after the `seen` first ones, waiting `timeoutMs` at most. */
  next(type: string, seen = 0, timeoutMs = 10_000): Promise<ClientEvent> {
    return new Promise((resolve, reject) => {
      const look = () => {
        const found = this.events.slice(seen).find((e) => e.type === type);
        if (!found && !this.socket.destroyed) return;
        this.#waiters.delete(look);
        clearTimeout(timer);
        if (found) resolve(found);
        else reject(new Error(`the connection closed without ${type}; got ${this.types().join(' ')}`));
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(look);
        reject(new Error(`no ${type}; got ${this.types().join(' ')}`));
      }, timeoutMs);
      this.#waiters.add(look);
      look();
    });
  }

  /** The `n`th event of `type` (0 first), waiting for it. */
  async nth(type: string, n: number, timeoutMs = 10_000): Promise<ClientEvent> {
    let seen = 0;
    for (let i = 0; i <= n; i++) {
      const event = await this.next(type, seen, timeoutMs);
      seen = this.events.indexOf(event) + 1;
      if (i === n) return event;
    }
    throw new Error('unreachable');
  }

  types(): string[] {
    return this.events.map((e) => e.type);
  }

  /**
   * The `error` after the `seen` first events, once the connection has ended after it within `ms`
   * (voxd ends a connection at its error, as the reference servers do); fails if another event
   * follows the error or the connection stays open.
   */
  async refusal(seen = 0, ms = 1000): Promise<ClientEvent> {
    const error = await this.next('error', seen);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`the connection stayed open ${ms} ms after its error: ${error.data.text}`)),
        ms,
      );
    });
    try {
      await Promise.race([this.closed, late]);
    } finally {
      clearTimeout(timer);
    }
    const after = this.events.slice(this.events.indexOf(error) + 1);
    if (after.length > 0) throw new Error(`events after the error: ${after.map((e) => e.type).join(' ')}`);
    return error;
  }

  /**
   * Reads as Home Assistant's loops read: until an event of one of `types` after the `seen` first
   * ones, or the end of the connection, within `ms`; then whether the connection ended, and the
   * events it read.
   */
  readUntil(types: string[], seen = 0, ms = 1000): Promise<{ ended: boolean; events: ClientEvent[] }> {
    return new Promise((resolve, reject) => {
      const look = () => {
        const events = this.events.slice(seen);
        const found = events.some((e) => types.includes(e.type));
        if (!found && !this.socket.destroyed) return;
        this.#waiters.delete(look);
        clearTimeout(timer);
        resolve({ ended: !found, events });
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(look);
        reject(
          new Error(`read ${ms} ms without ${types.join(', ')} or the end; got ${this.types().join(' ')}`),
        );
      }, ms);
      this.#waiters.add(look);
      look();
    });
  }

  close(): Promise<void> {
    this.socket.end();
    return this.closed;
  }
}

/** One event's bytes as the library writes them. */
export function frameOf(type: string, data: Record<string, unknown> = {}, payload?: Buffer): Buffer {
  const dataBytes = Buffer.from(JSON.stringify(data), 'utf8');
  const header: Record<string, unknown> = { type, version: '1.8.0', data_length: dataBytes.length };
  if (payload) header['payload_length'] = payload.length;
  return Buffer.concat([Buffer.from(`${JSON.stringify(header)}\n`), dataBytes, payload ?? Buffer.alloc(0)]);
}

/** The PCM16 payloads of the audio-chunks after the `seen` first events, joined. */
export function audioOf(events: ClientEvent[], seen = 0): Buffer {
  return Buffer.concat(
    events
      .slice(seen)
      .filter((e) => e.type === 'audio-chunk')
      .map((e) => e.payload ?? Buffer.alloc(0)),
  );
}
