/**
 * Chunked transfer framing (RFC 9112 section 7.1) followed over raw bytes, as a pure state
 * machine: bytes in; how many belong to the body, the framing's phase, the data byte count, and the
 * first problem out. No sockets, no timers, no node:http, so that every split of a body can be
 * tested without a connection.
 *
 * The live body reader needs it because node:http does not expose the size a chunk declares, and
 * `live_ingest.max_chunk_bytes` is checked on that size as soon as its size line ends, before the
 * chunk's data arrives. Node's parser stays the authority on the data: this one is tolerant where
 * node's strict parser is not (a bare LF where CRLF belongs, blanks after a size, anything in a
 * trailer line), so node reports those itself, and it never refuses a body node accepts.
 */

/**
 * What stops the framing: `malformed` with a description for the client, or `oversize`, a chunk
 * declaring more than the limit (`declared`: the size as a message shows it).
 */
export type FramingIssue = { kind: 'malformed'; detail: string } | { kind: 'oversize'; declared: string };

export interface FeedResult {
  /**
   * Bytes of the buffer taken as part of the body: all of them, unless the body ended inside it
   * (what follows belongs to the next request) or an issue stopped it (then the offset of the byte
   * that revealed the issue).
   */
  used: number;
  issue?: FramingIssue;
}

/**
 * Where the framing is: in a chunk size line (with any extension), in a chunk's data, at the CRLF
 * after the data, in the trailer section after the zero-length chunk, or past the empty line that
 * ends the body.
 */
export type FramingPhase = 'size' | 'data' | 'after-data' | 'trailers' | 'end';

const SIZE = 0; // the first hex digit of a size line
const SIZE_MORE = 1; // more hex digits, or what ends them
const SIZE_WS = 2; // blanks after the size (tolerated here; node:http's strict parser refuses them)
const EXT = 3; // a chunk extension, up to the end of the line
const SIZE_LF = 4; // the LF of the size line's CRLF
const DATA = 5;
const DATA_CR = 6; // the CRLF after the data
const DATA_LF = 7;
const TRAILER = 8; // the start of a trailer line, or of the empty line that ends the body
const TRAILER_CR = 9; // a CR at the start of a line: the end, when LF follows
const TRAILER_LINE = 10; // inside a trailer field line (its content is node:http's to check)
const END = 11;

/** Most hex digits of a size kept for messages. */
const HEX_KEPT = 24;

/**
 * Follows one chunked body from its first size line to the empty line after the zero-length
 * chunk and its trailers. Feed it the body's bytes in any split; it reports the first issue and
 * takes nothing after it (or after the end).
 */
export class ChunkFraming {
  #state = SIZE;
  #value = 0;
  #hex = '';
  #remaining = 0;
  /** Data bytes seen so far (the body after de-chunking). */
  dataBytes = 0;
  /** Chunks with data whose size line has ended (the zero-length chunk is not counted). */
  chunks = 0;

  /** `maxChunk`: the largest size a chunk may declare (Infinity for no limit). */
  constructor(private readonly maxChunk: number) {}

  /** The empty line that ends the body has been seen. */
  get done(): boolean {
    return this.#state === END;
  }

  get phase(): FramingPhase {
    const state = this.#state;
    if (state <= SIZE_LF) return 'size';
    if (state === DATA) return 'data';
    if (state <= DATA_LF) return 'after-data';
    if (state <= TRAILER_LINE) return 'trailers';
    return 'end';
  }

  feed(buf: Uint8Array): FeedResult {
    const n = buf.length;
    let i = 0;
    while (i < n && this.#state !== END) {
      if (this.#state === DATA) {
        const take = Math.min(this.#remaining, n - i);
        i += take;
        this.#remaining -= take;
        this.dataBytes += take;
        if (this.#remaining === 0) this.#state = DATA_CR;
        continue;
      }
      const issue = this.#step(buf[i]!);
      if (issue) return { used: i, issue };
      i++;
    }
    return { used: i };
  }

  #step(b: number): FramingIssue | undefined {
    switch (this.#state) {
      case SIZE: {
        const d = hexValue(b);
        if (d < 0) return malformed(`expected a hexadecimal chunk size, got ${showByte(b)}`);
        this.#value = d;
        this.#hex = d === 0 ? '' : String.fromCharCode(b);
        this.#state = SIZE_MORE;
        return undefined;
      }
      case SIZE_MORE: {
        const d = hexValue(b);
        if (d >= 0) {
          this.#value = this.#value * 16 + d;
          if ((this.#hex !== '' || d !== 0) && this.#hex.length < HEX_KEPT)
            this.#hex += String.fromCharCode(b);
          // Past 2^53 the size is over any limit already: no need to wait for its last digit.
          if (this.#value > Number.MAX_SAFE_INTEGER && this.#value > this.maxChunk) {
            return { kind: 'oversize', declared: declaredSize(`${this.#hex}+`) };
          }
          return undefined;
        }
        if (b === 0x3b) this.#state = EXT;
        else if (b === 0x20 || b === 0x09) this.#state = SIZE_WS;
        else if (b === 0x0d) this.#state = SIZE_LF;
        else if (b === 0x0a) return this.#endSize() ?? this.#sizeLineDone();
        else return malformed(`invalid character ${showByte(b)} in a chunk size`);
        return this.#endSize();
      }
      case SIZE_WS:
        if (b === 0x20 || b === 0x09) return undefined;
        if (b === 0x3b) this.#state = EXT;
        else if (b === 0x0d) this.#state = SIZE_LF;
        else if (b === 0x0a) return this.#sizeLineDone();
        else return malformed(`invalid character ${showByte(b)} after a chunk size`);
        return undefined;
      case EXT:
        if (b === 0x0d) this.#state = SIZE_LF;
        else if (b === 0x0a) return this.#sizeLineDone();
        return undefined;
      case SIZE_LF:
        if (b !== 0x0a) return malformed(`expected LF after CR in a chunk size line, got ${showByte(b)}`);
        return this.#sizeLineDone();
      case DATA_CR:
        if (b === 0x0d) this.#state = DATA_LF;
        else if (b === 0x0a) this.#state = SIZE;
        else return malformed(`expected CRLF after a chunk's data, got ${showByte(b)}`);
        return undefined;
      case DATA_LF:
        if (b !== 0x0a) return malformed(`expected LF after CR at the end of a chunk, got ${showByte(b)}`);
        this.#state = SIZE;
        return undefined;
      case TRAILER:
        this.#state = b === 0x0d ? TRAILER_CR : b === 0x0a ? END : TRAILER_LINE;
        return undefined;
      case TRAILER_CR:
        this.#state = b === 0x0a ? END : TRAILER_LINE;
        return undefined;
      case TRAILER_LINE:
        if (b === 0x0a) this.#state = TRAILER;
        return undefined;
      default:
        return undefined;
    }
  }

  /** The size's digits are all in: check it against the limit. */
  #endSize(): FramingIssue | undefined {
    if (this.#value > this.maxChunk) return { kind: 'oversize', declared: declaredSize(this.#hex) };
    return undefined;
  }

  #sizeLineDone(): undefined {
    if (this.#value === 0) this.#state = TRAILER;
    else {
      this.chunks++;
      this.#remaining = this.#value;
      this.#state = DATA;
    }
    return undefined;
  }
}

/**
 * Where the body starts in the read that ended a request's headers: just after the first empty
 * line that follows this request's request line (`requestLine`, with its CRLF). Earlier empty
 * lines belong to pipelined requests before this one, later ones to the body's data. Picking by
 * which candidate's rest parses as chunked framing would be wrong: the data of a malformed body
 * (or the empty rest after its final CRLF CRLF) can parse cleanly from a later point, and the
 * framing check would then start inside the body and report a desync (a 500) instead of the
 * client's malformed framing (a 400). Without the request line in this read (its head began in an
 * earlier one) nothing precedes it here, so the first empty line, possibly straddling the previous
 * read, ends the head. Undefined when the read holds no end of the head.
 */
export function bodyStart(buf: Buffer, requestLine: string): number | undefined {
  const anchor = buf.indexOf(requestLine, 0, 'latin1');
  const from = anchor < 0 ? 0 : anchor + requestLine.length;
  if (anchor < 0) {
    // The empty line may straddle the previous read: this one then starts with its last bytes.
    if (buf[0] === 0x0a) return 1;
    if (buf[0] === 0x0d && buf[1] === 0x0a) return 2;
  }
  for (let i = buf.indexOf(0x0a, Math.max(from, 1)); i !== -1; i = buf.indexOf(0x0a, i + 1)) {
    const blank = buf[i - 1] === 0x0a || (i >= 2 && buf[i - 1] === 0x0d && buf[i - 2] === 0x0a);
    if (blank) return i + 1;
  }
  return undefined;
}

function malformed(detail: string): FramingIssue {
  return { kind: 'malformed', detail };
}

function hexValue(b: number): number {
  if (b >= 0x30 && b <= 0x39) return b - 0x30;
  if (b >= 0x61 && b <= 0x66) return b - 0x57;
  if (b >= 0x41 && b <= 0x46) return b - 0x37;
  return -1;
}

function showByte(b: number): string {
  return b >= 0x21 && b <= 0x7e ? `"${String.fromCharCode(b)}"` : `byte 0x${b.toString(16).padStart(2, '0')}`;
}

/**
 * A declared size for a message: decimal when all its digits were kept, else the hex digits
 * (`hex` ends with "+" when the size was refused before its last digit).
 */
function declaredSize(hex: string): string {
  if (hex.endsWith('+')) return `0x${hex.slice(0, -1)}... (over 2^53)`;
  return BigInt(`0x${hex || '0'}`).toString();
}
