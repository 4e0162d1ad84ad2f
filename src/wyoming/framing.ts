/**
 * Wyoming's framing (the `wyoming` Python library, event.py): one JSON header line ending in `\n`,
 * `{type, data?, data_length?, payload_length?, version?}`, then `data_length` bytes of JSON merged
 * over the header's `data`, then `payload_length` bytes of payload (PCM). The reader is strict and
 * bounded: a header line, a data block and a payload each have a limit, and anything malformed is a
 * WyomingError with the code the client's `error` event gets.
 */
import { showValue } from '../errors.js';
import { jsonShapeFault } from '../util/json-text.js';

/** The protocol version voxd's events carry (the library's writer always adds one). */
export const WYOMING_VERSION = '1.8.0';

export interface WyomingEvent {
  type: string;
  data: Record<string, unknown>;
  payload?: Buffer;
}

export interface FrameLimits {
  /** The longest header line, in bytes, newline excluded. */
  headerBytes: number;
  dataBytes: number;
  payloadBytes: number;
}

export const FRAME_LIMITS: Readonly<FrameLimits> = Object.freeze({
  headerBytes: 64 * 1024,
  dataBytes: 1024 * 1024,
  // An audio chunk: a second of 48 kHz stereo 32-bit audio is 384 KiB; clients send far less.
  payloadBytes: 4 * 1024 * 1024,
});

export class WyomingError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/** A length field: absent or a non-negative integer within `max`. */
function lengthOf(header: Record<string, unknown>, key: string, max: number): number {
  const value = header[key];
  if (value === undefined || value === null) return 0;
  if (!Number.isSafeInteger(value) || (value as number) < 0)
    throw new WyomingError('invalid_event', `${key}: ${showValue(value)} is not a byte count`);
  if ((value as number) > max)
    throw new WyomingError('event_too_large', `${key}: ${value} is over voxd's limit of ${max} bytes`);
  return value as number;
}

function parseJson(bytes: Buffer, what: string): Record<string, unknown> {
  const text = bytes.toString('utf8');
  // Checked on the text, before it is parsed (see json-text.ts): deep nesting costs JSON.parse
  // main-thread time, and JSON.stringify of a deep field (an error message) would overflow the stack.
  const fault = jsonShapeFault(text);
  if (fault !== undefined) throw new WyomingError('invalid_event', `${what}: ${fault}`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new WyomingError('invalid_event', `${what} is not JSON`);
  }
  if (!isObject(value)) throw new WyomingError('invalid_event', `${what} is not a JSON object`);
  return value;
}

/**
 * Turns the bytes of a connection into events. `push` takes what the socket read and returns the
 * events it completed; it throws a WyomingError on the first malformed one (the connection is then
 * beyond repair: its next byte's meaning is unknown).
 */
export class FrameReader {
  readonly #limits: FrameLimits;
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  /** The event whose data and payload are being read, and how many bytes each still needs. */
  #current: { header: Record<string, unknown>; dataLength: number; payloadLength: number } | undefined;

  constructor(limits: FrameLimits = FRAME_LIMITS) {
    this.#limits = limits;
  }

  /** Bytes held, waiting for the rest of their event. */
  get buffered(): number {
    return this.#pendingBytes;
  }

  push(chunk: Buffer): WyomingEvent[] {
    this.#pending.push(chunk);
    this.#pendingBytes += chunk.length;
    const events: WyomingEvent[] = [];
    for (;;) {
      const event = this.#next();
      if (!event) return events;
      events.push(event);
    }
  }

  #take(n: number): Buffer {
    const all = this.#pending.length === 1 ? this.#pending[0]! : Buffer.concat(this.#pending);
    this.#pending = n < all.length ? [all.subarray(n)] : [];
    this.#pendingBytes = all.length - n;
    return all.subarray(0, n);
  }

  #next(): WyomingEvent | undefined {
    if (!this.#current) {
      const all = this.#pending.length === 1 ? this.#pending[0]! : Buffer.concat(this.#pending);
      this.#pending = all.length ? [all] : [];
      const newline = all.indexOf(0x0a);
      if (newline < 0) {
        if (all.length > this.#limits.headerBytes)
          throw new WyomingError(
            'event_too_large',
            `header line: over voxd's limit of ${this.#limits.headerBytes} bytes without a newline`,
          );
        return undefined;
      }
      if (newline > this.#limits.headerBytes)
        throw new WyomingError(
          'event_too_large',
          `header line: ${newline} bytes, over voxd's limit of ${this.#limits.headerBytes}`,
        );
      const header = parseJson(this.#take(newline + 1).subarray(0, newline), 'header line');
      if (typeof header['type'] !== 'string' || header['type'] === '')
        throw new WyomingError('invalid_event', `type: ${showValue(header['type'])} is not an event type`);
      if (header['data'] !== undefined && header['data'] !== null && !isObject(header['data']))
        throw new WyomingError('invalid_event', 'data: not a JSON object');
      this.#current = {
        header,
        dataLength: lengthOf(header, 'data_length', this.#limits.dataBytes),
        payloadLength: lengthOf(header, 'payload_length', this.#limits.payloadBytes),
      };
    }
    const { header, dataLength, payloadLength } = this.#current;
    if (this.#pendingBytes < dataLength + payloadLength) return undefined;
    this.#current = undefined;
    const data = { ...((header['data'] as Record<string, unknown> | undefined) ?? {}) };
    if (dataLength > 0) Object.assign(data, parseJson(this.#take(dataLength), 'data block'));
    const event: WyomingEvent = { type: header['type'] as string, data };
    if (payloadLength > 0) event.payload = Buffer.from(this.#take(payloadLength));
    return event;
  }
}

/** One event as bytes: the header line, the data block (when there is data) and the payload. */
export function encodeEvent(type: string, data: Record<string, unknown> = {}, payload?: Buffer): Buffer {
  const dataBytes = Object.keys(data).length > 0 ? Buffer.from(JSON.stringify(data), 'utf8') : undefined;
  const header: Record<string, unknown> = { type, version: WYOMING_VERSION };
  if (dataBytes) header['data_length'] = dataBytes.length;
  if (payload && payload.length > 0) header['payload_length'] = payload.length;
  const line = Buffer.from(`${JSON.stringify(header)}\n`, 'utf8');
  return Buffer.concat([
    line,
    ...(dataBytes ? [dataBytes] : []),
    ...(payload && payload.length > 0 ? [payload] : []),
  ]);
}
