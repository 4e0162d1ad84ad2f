/**
 * The live-ingest body reader against a real node:http server on loopback, fed exact bytes by raw
 * TCP clients. Ordering comes from events (the reader opened, a yield arrived), never from sleeps;
 * the timeouts run on a ManualClock that the tests move themselves.
 */

import assert from 'node:assert/strict';
import { EventEmitter, getEventListeners, once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { describe, test } from 'node:test';
import { floats } from '../../../src/audio/pcm16-audio.js';
import type { Audio } from '../../../src/audio/types.js';
import { liveIngestLimits } from '../../../src/config/live-ingest-limits.js';
import type { LiveIngestConfig } from '../../../src/config/types.js';
import { VoxdError } from '../../../src/errors.js';
import {
  LIVE_BODY_HIGH_WATER_BYTES,
  type LiveBody,
  type LiveBodyOptions,
  openLiveBody,
  reportClientError,
} from '../../../src/http/live/body.js';
import type { LivePcmFormat } from '../../../src/http/live/pcm-format.js';
import type { Clock } from '../../../src/util/clock.js';
import { ManualClock } from '../../helpers/manual-clock.js';

// ---- harness ----

type Limits = LiveBodyOptions['limits'];

/** Generous defaults: a test that fails to trigger the limit under test fails on its message, not by hanging. */
const LIMITS: Limits = {
  idle_timeout_ms: 5000,
  total_timeout_ms: 10000,
  max_body_bytes: 0,
  max_chunk_bytes: 1 << 20,
};

const S16_MONO: LivePcmFormat = { sampleRate: 16000, channels: 1, sampleFormat: 's16le' };

interface Outcome {
  /** openLiveBody threw (the body is not chunked). */
  openError?: unknown;
  /** The iteration threw. */
  error?: unknown;
  yields: Audio[];
  bytesReceived?: number;
  /** Listeners of the reader still attached after it finished (must be none). */
  leftovers: string[];
}

interface HarnessConfig {
  format?: LivePcmFormat;
  limits?: Partial<Limits>;
  signal?: AbortSignal;
  /** Open the reader after the request event has returned (the request holds what arrives meanwhile). */
  late?: boolean;
  /** Stop iterating (break) after this many yields. */
  breakAfter?: number;
  /** Start iterating only once this settles. */
  startGate?: Promise<void>;
  /** The reader's clock (the system clock by default). */
  clock?: Clock;
}

class Harness extends EventEmitter {
  readonly #outcomes: Promise<Outcome>[] = [];
  readonly server: Server;

  constructor(private readonly config: HarnessConfig) {
    super();
    this.server = createServer((req, res) => {
      let settle!: (o: Outcome) => void;
      this.#outcomes.push(new Promise<Outcome>((resolve) => (settle = resolve)));
      const run = () => {
        let body: LiveBody;
        try {
          body = openLiveBody(req, {
            format: this.config.format ?? S16_MONO,
            limits: { ...LIMITS, ...this.config.limits },
            signal: this.config.signal,
            label: 'live test',
            clock: this.config.clock,
          });
        } catch (err) {
          res.writeHead((err as VoxdError).status ?? 500);
          res.end((err as Error).message);
          settle({ openError: err, yields: [], leftovers: [] });
          return;
        }
        this.emit('open', body, req);
        void this.#consume(req, body).then((outcome) => {
          settle(outcome);
          if (res.destroyed) return;
          if (outcome.error === undefined) res.end('ok');
          else res.destroy();
        });
      };
      if (this.config.late) setImmediate(run);
      else run();
    });
  }

  async #consume(req: IncomingMessage, body: LiveBody): Promise<Outcome> {
    const yields: Audio[] = [];
    let error: unknown;
    await this.config.startGate;
    try {
      for await (const audio of body) {
        yields.push(audio);
        this.emit('yield', audio);
        if (this.config.breakAfter !== undefined && yields.length >= this.config.breakAfter) break;
      }
    } catch (err) {
      error = err;
    }
    return {
      error,
      yields,
      bytesReceived: body.bytesReceived,
      leftovers: leftovers(req, this.config.signal),
    };
  }

  async listen(): Promise<number> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    return (this.server.address() as { port: number }).port;
  }

  /** The outcome of the n-th request (0-based), once its reader has finished. */
  async outcome(n = 0): Promise<Outcome> {
    while (this.#outcomes.length <= n) await once(this.server, 'request');
    return this.#outcomes[n]!;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Names of the reader's own listeners (`#on...`) still attached anywhere. */
function leftovers(req: IncomingMessage, signal: AbortSignal | undefined): string[] {
  const found: string[] = [];
  const scan = (where: string, emitter: NodeJS.EventEmitter, events: string[]) => {
    for (const event of events) {
      for (const fn of emitter.listeners(event)) {
        if (fn.name.startsWith('#on')) found.push(`${where} ${event} ${fn.name}`);
      }
    }
  };
  scan('req', req, ['data', 'end', 'error', 'close']);
  if (req.socket) scan('socket', req.socket, ['data', 'end', 'error', 'close']);
  if (signal) {
    for (const fn of getEventListeners(signal, 'abort')) {
      if (fn.name.startsWith('#on')) found.push(`signal abort ${fn.name}`);
    }
  }
  return found;
}

async function withHarness(config: HarnessConfig, fn: (h: Harness, port: number) => Promise<void>) {
  const h = new Harness(config);
  const port = await h.listen();
  try {
    await fn(h, port);
  } finally {
    await h.close();
  }
}

/** A raw TCP client: exact bytes out, the response text in. */
class RawClient {
  readonly socket: Socket;
  #response = '';

  constructor(port: number) {
    this.socket = connect(port, '127.0.0.1');
    this.socket.on('data', (d: Buffer) => {
      this.#response += d.toString('latin1');
    });
    this.socket.on('error', () => {});
  }

  /** The response text so far, once it matches (or the connection closed). */
  async response(pattern: RegExp): Promise<string> {
    while (!pattern.test(this.#response) && !this.socket.destroyed) {
      await Promise.race([once(this.socket, 'data'), once(this.socket, 'close')]);
    }
    return this.#response;
  }

  write(...parts: (string | Buffer)[]): void {
    this.socket.write(
      Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : p))),
    );
  }
}

const HEAD =
  'POST /v1/audio/transcriptions/live HTTP/1.1\r\nHost: voxd\r\nTransfer-Encoding: chunked\r\n\r\n';
const END = '0\r\n\r\n';

/** One chunk of the chunked encoding. */
function chunk(data: Buffer | string): Buffer {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'latin1') : data;
  return Buffer.concat([
    Buffer.from(`${bytes.length.toString(16)}\r\n`, 'latin1'),
    bytes,
    Buffer.from('\r\n'),
  ]);
}

/** `bytes` cut into chunks of the given sizes (the last takes the rest). */
function chunks(bytes: Buffer, sizes: number[]): Buffer {
  const out: Buffer[] = [];
  let at = 0;
  for (const size of sizes) {
    out.push(chunk(bytes.subarray(at, at + size)));
    at += size;
  }
  if (at < bytes.length) out.push(chunk(bytes.subarray(at)));
  return Buffer.concat(out);
}

function s16(values: number[]): Buffer {
  const buf = Buffer.alloc(values.length * 2);
  for (const [i, v] of values.entries()) buf.writeInt16LE(v, i * 2);
  return buf;
}

function f32(values: number[]): Buffer {
  const buf = Buffer.alloc(values.length * 4);
  for (const [i, v] of values.entries()) buf.writeFloatLE(v, i * 4);
  return buf;
}

function samplesOf(yields: Audio[]): number[] {
  return yields.flatMap((a) => Array.from(floats(a)));
}

function assertOk(outcome: Outcome): void {
  if (outcome.error !== undefined) throw outcome.error;
  assert.deepEqual(outcome.leftovers, []);
}

/** The iteration failed with a VoxdError of this status whose message matches. */
function assertFailed(outcome: Outcome, status: number, message: RegExp): VoxdError {
  assert.ok(outcome.error instanceof VoxdError, `expected a VoxdError, got ${String(outcome.error)}`);
  assert.match(outcome.error.message, message);
  assert.equal(outcome.error.status, status, outcome.error.message);
  assert.deepEqual(outcome.leftovers, [], 'every listener is removed');
  return outcome.error;
}

const S16_VALUES = [0, 1, -1, 32767, -32768, 12345, -12345, 256];

// ---- tests ----

describe('live body: decoding', () => {
  test('s16le: samples split across chunks decode exactly, in one read', async () => {
    await withHarness({}, async (h, port) => {
      const c = new RawClient(port);
      c.write(HEAD, chunks(s16(S16_VALUES), [3, 1, 5, 7]), END);
      const outcome = await h.outcome();
      assertOk(outcome);
      assert.deepEqual(
        samplesOf(outcome.yields),
        S16_VALUES.map((v) => v / 32768),
      );
      assert.equal(outcome.bytesReceived, 16);
      assert.match(await c.response(/\r\n\r\nok$/), /^HTTP\/1\.1 200/);
    });
  });

  test('s16le: a sample split across reads is carried to the next yield, never split', async () => {
    await withHarness({}, async (h, port) => {
      const c = new RawClient(port);
      const bytes = s16(S16_VALUES);
      c.write(HEAD);
      await once(h, 'open');
      const sizes: [number, number][] = [
        [0, 3],
        [3, 4],
        [4, 9],
        [9, 16],
      ];
      const lengths: number[] = [];
      for (const [from, to] of sizes) {
        const yielded = once(h, 'yield');
        c.write(chunk(bytes.subarray(from, to)));
        lengths.push(floats((await yielded)[0] as Audio).length);
      }
      c.write(END);
      const outcome = await h.outcome();
      assertOk(outcome);
      assert.deepEqual(lengths, [1, 1, 2, 4]);
      assert.deepEqual(
        samplesOf(outcome.yields),
        S16_VALUES.map((v) => v / 32768),
      );
    });
  });

  test('f32le stereo: frames split across chunks stay whole; out-of-range values are clamped', async () => {
    const format: LivePcmFormat = { sampleRate: 48000, channels: 2, sampleFormat: 'f32le' };
    const values = [0.5, -0.25, 1e-7, -1, 2, Number.NaN, -3, 0.75, 0.125, -0.0625];
    const expected = [0.5, -0.25, Math.fround(1e-7), -1, 1, 0, -1, 0.75, 0.125, -0.0625];
    for (const split of ['one read', 'after open']) {
      await withHarness({ format }, async (h, port) => {
        const c = new RawClient(port);
        const body = chunks(f32(values), [5, 6, 13, 1, 8]);
        if (split === 'one read') c.write(HEAD, body, END);
        else {
          c.write(HEAD);
          await once(h, 'open');
          c.write(body, END);
        }
        const outcome = await h.outcome();
        assertOk(outcome);
        assert.deepEqual(samplesOf(outcome.yields), expected, split);
        for (const audio of outcome.yields) {
          assert.equal(audio.channels, 2);
          assert.equal(audio.sampleRate, 48000);
          assert.equal(floats(audio).length % 2, 0, 'whole frames only');
        }
      });
    }
  });

  test('a normal end with trailers after the terminating chunk', async () => {
    await withHarness({}, async (h, port) => {
      const c = new RawClient(port);
      c.write(HEAD, chunk(s16([7, 8])), '0\r\nX-Trailer: yes\r\n\r\n');
      const outcome = await h.outcome();
      assertOk(outcome);
      assert.deepEqual(samplesOf(outcome.yields), [7 / 32768, 8 / 32768]);
      assert.match(await c.response(/\r\n\r\nok$/), /^HTTP\/1\.1 200/);
    });
  });

  test('an empty body ends at once with nothing yielded', async () => {
    await withHarness({}, async (h, port) => {
      new RawClient(port).write(HEAD, END);
      const outcome = await h.outcome();
      assertOk(outcome);
      assert.deepEqual(outcome.yields, []);
    });
  });

  test('a body that ends with a partial frame fails after the whole frames were yielded', async () => {
    await withHarness({}, async (h, port) => {
      new RawClient(port).write(HEAD, chunk(Buffer.from([1, 0, 2])), END);
      const outcome = await h.outcome();
      assertFailed(
        outcome,
        400,
        /ends with 1 bytes that are not a whole frame \(2 bytes: 1 channel\(s\) of s16le\)/,
      );
      assert.deepEqual(samplesOf(outcome.yields), [1 / 32768]);
    });
  });

  test('a pipelined request before the live one in the same read does not confuse the framing', async () => {
    await withHarness({}, async (h, port) => {
      const c = new RawClient(port);
      c.write('GET /x HTTP/1.1\r\nHost: voxd\r\n\r\n', HEAD, chunks(s16(S16_VALUES), [5, 2]), END);
      const first = await h.outcome(0);
      assert.ok(first.openError instanceof VoxdError);
      const outcome = await h.outcome(1);
      assertOk(outcome);
      assert.deepEqual(
        samplesOf(outcome.yields),
        S16_VALUES.map((v) => v / 32768),
      );
    });
  });
});

describe('live body: connections and backpressure', () => {
  test('a second live request on a kept-alive connection is read under the same limits', async () => {
    await withHarness({ limits: { max_chunk_bytes: 8 } }, async (h, port) => {
      const c = new RawClient(port);
      c.write(HEAD, chunk(s16([1, 2])), END);
      assertOk(await h.outcome(0));
      await c.response(/\r\n\r\nok$/);
      c.write(HEAD);
      await once(h, 'open');
      const yielded = once(h, 'yield');
      c.write(chunks(s16([3, 4, 5]), [3]));
      await yielded;
      c.write(chunk(Buffer.alloc(9)));
      const outcome = await h.outcome(1);
      assertFailed(outcome, 413, /a chunk of at least 9 bytes is larger than 8/);
      assert.deepEqual(
        samplesOf(outcome.yields),
        [3, 4, 5].map((v) => v / 32768),
      );
    });
  });

  test('a consumer that lags pauses the body, and the pause does not count as idle', async () => {
    let release!: () => void;
    const startGate = new Promise<void>((resolve) => (release = resolve));
    const clock = new ManualClock();
    await withHarness({ startGate, clock, limits: { idle_timeout_ms: 200 } }, async (h, port) => {
      const total = 3 << 20;
      const c = new RawClient(port);
      c.write(HEAD);
      const [body, req] = (await once(h, 'open')) as [LiveBody, IncomingMessage];
      const paused = once(req, 'pause');
      const piece = Buffer.alloc(1 << 16, 1);
      for (let at = 0; at < total; at += piece.length) c.write(chunk(piece));
      c.write(END);
      await paused;
      assert.ok(body.bytesReceived >= 1 << 20, `paused at ${body.bytesReceived} bytes, before 1 MiB`);
      assert.ok(
        body.bytesBuffered < LIVE_BODY_HIGH_WATER_BYTES + piece.length,
        `${body.bytesBuffered} bytes held at the pause`,
      );
      assert.equal(clock.timers, 1, 'only total_timeout_ms runs while the body is held paused');
      // Twice the idle limit with nothing taken: the reader holds the body paused, so no idle error.
      clock.advance(400);
      assert.ok(body.bytesReceived < total, `paused at ${body.bytesReceived} of ${total} bytes`);
      release();
      const outcome = await h.outcome();
      assertOk(outcome);
      assert.equal(outcome.bytesReceived, total);
      assert.equal(samplesOf(outcome.yields).length, total / 2);
    });
  });
});

/**
 * What the server holds of a live body now: the reader's queue (bytesBuffered) and what node:http
 * buffered in the request stream for a paused reader.
 */
function heldBytes(body: LiveBody, req: IncomingMessage): number {
  return body.bytesBuffered + req.readableLength;
}

/**
 * Resolves once the server stops taking the body in, in a later turn of the event loop (the rest
 * of the read in progress is parsed by then): the reader paused the request and node:http the
 * socket. Also resolves when all of `total` arrived, so that a reader that never pauses fails on
 * the bound instead of hanging.
 */
function heldBack(body: LiveBody, req: IncomingMessage, total: number): Promise<void> {
  return new Promise((resolve) => {
    const socket = req.socket;
    const check = () => {
      if (!(req.isPaused() && socket.isPaused()) && body.bytesReceived < total) return;
      req.off('data', check);
      socket.off('pause', check);
      setImmediate(resolve);
    };
    req.on('data', check);
    socket.on('pause', check);
    check();
  });
}

/** What node reads from a TCP socket at once (libuv's 64 KiB): no piece of a body is larger. */
const SOCKET_READ = 64 << 10;

describe('live body: memory stays bounded', () => {
  // The documented bound (module comment of live-body.ts, api.md): the reader holds less than
  // LIVE_BODY_HIGH_WATER_BYTES plus one piece node:http delivered; node:http itself buffers at
  // most the request's readableHighWaterMark plus the rest of one socket read (SOCKET_READ) before
  // it stops reading the socket. 16 MiB sent at once, to a consumer that does not pull, must stay
  // within it.
  const total = 16 << 20;
  for (const [what, body] of [
    [
      'one huge chunk',
      () =>
        Buffer.concat([
          Buffer.from(`${total.toString(16)}\r\n`),
          Buffer.alloc(total, 1),
          Buffer.from('\r\n'),
        ]),
    ],
    [
      'a fast stream of 4 KiB chunks',
      () => chunks(Buffer.alloc(total, 1), new Array(total / 4096).fill(4096)),
    ],
  ] as const) {
    test(`${what} to a consumer that lags: the server holds about 1 MiB, not the body`, async () => {
      let release!: () => void;
      const startGate = new Promise<void>((resolve) => (release = resolve));
      const clock = new ManualClock();
      // The default max_chunk_bytes (8 MiB): the chunk is over it, the pieces are not.
      const limits = { max_chunk_bytes: 8 << 20 };
      await withHarness({ startGate, clock, limits }, async (h, port) => {
        const c = new RawClient(port);
        c.write(HEAD);
        const [live, req] = (await once(h, 'open')) as [LiveBody, IncomingMessage];
        let largestPiece = 0;
        let most = 0;
        const note = () => {
          most = Math.max(most, heldBytes(live, req));
        };
        req.on('data', (piece: Buffer) => {
          largestPiece = Math.max(largestPiece, piece.length);
          note();
        });
        h.on('yield', note);
        const bound = () =>
          LIVE_BODY_HIGH_WATER_BYTES + largestPiece + req.readableHighWaterMark + SOCKET_READ;
        // All of it at once: what the kernel does not take waits in the client's socket.
        c.write(body(), END);
        await heldBack(live, req, total);
        note();
        assert.ok(most <= bound(), `held ${most} bytes while the consumer lagged, over the bound ${bound()}`);
        assert.ok(live.bytesReceived < total, `took in ${live.bytesReceived} of ${total} bytes`);
        assert.ok(largestPiece <= SOCKET_READ, `a piece of ${largestPiece} bytes, more than a socket read`);
        release();
        const outcome = await h.outcome();
        assertOk(outcome);
        assert.equal(outcome.bytesReceived, total);
        assert.equal(
          outcome.yields.reduce((n, a) => n + floats(a).length, 0),
          total / 2,
        );
        assert.ok(most <= bound(), `held ${most} bytes, over the bound ${bound()}`);
      });
    });
  }
});

describe('live body: transfer encoding', () => {
  for (const [name, head] of [
    ['Content-Length', 'Content-Length: 4\r\n\r\n\x01\x00\x02\x00'],
    ['no body at all', '\r\n'],
    ['gzip, chunked', 'Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n'],
  ] as const) {
    test(`a body that is not plainly chunked (${name}) is a 400`, async () => {
      await withHarness({}, async (h, port) => {
        const c = new RawClient(port);
        c.write(`POST /v1/audio/speech/live HTTP/1.1\r\nHost: voxd\r\n${head}`);
        const outcome = await h.outcome();
        assert.ok(outcome.openError instanceof VoxdError);
        assert.equal(outcome.openError.status, 400);
        assert.match(
          outcome.openError.message,
          /^live test requires an incrementally delivered \(chunked\) request body/,
        );
        assert.match(await c.response(/chunked/), /^HTTP\/1\.1 400/);
      });
    });
  }
});

describe('live body: limits', () => {
  test('idle_timeout_ms: no bytes for that long fails, naming the limit', async () => {
    const clock = new ManualClock();
    await withHarness({ clock, limits: { idle_timeout_ms: 200 } }, async (h, port) => {
      const yielded = once(h, 'yield');
      new RawClient(port).write(HEAD, chunk(s16([5])));
      await yielded;
      // Armed when the body was opened (a reader on another clock would fail here, not hang).
      assert.equal(clock.timers, 2, 'the idle and total timeouts run on the clock passed in');
      clock.advance(199);
      assert.equal(clock.timers, 2, 'the idle and total timeouts still run 1 ms before the idle limit');
      clock.advance(1);
      const outcome = await h.outcome();
      assertFailed(outcome, 400, /^live body: no data for 200 ms \(live_ingest\.idle_timeout_ms\)$/);
      assert.equal(clock.timers, 0, 'every timer is cancelled');
      assert.deepEqual(samplesOf(outcome.yields), [5 / 32768], 'what came before was yielded');
    });
  });

  test('total_timeout_ms: a body still arriving after that long fails, naming the limit', async () => {
    const clock = new ManualClock();
    const limits = { idle_timeout_ms: 250, total_timeout_ms: 400 };
    await withHarness({ clock, limits }, async (h, port) => {
      const c = new RawClient(port);
      c.write(HEAD);
      await once(h, 'open');
      // A sample every 150 ms keeps the idle limit (250 ms) away; only the total can end it.
      const send = async () => {
        const yielded = once(h, 'yield');
        c.write(chunk(s16([1])));
        await yielded;
      };
      for (let at = 0; at < 300; at += 150) {
        await send();
        clock.advance(150);
        assert.equal(clock.timers, 2, `both timeouts still run ${at + 150} ms in`);
      }
      await send();
      clock.advance(99);
      assert.equal(clock.timers, 2, 'both timeouts still run 1 ms before the total limit');
      clock.advance(1);
      const outcome = await h.outcome();
      assertFailed(outcome, 400, /^live body: not complete after 400 ms \(live_ingest\.total_timeout_ms\)$/);
      assert.equal(clock.timers, 0, 'every timer is cancelled');
      assert.equal(outcome.yields.length, 3);
    });
  });

  test('0 disables the timeouts and max_body_bytes', async () => {
    const clock = new ManualClock();
    await withHarness(
      { clock, limits: { idle_timeout_ms: 0, total_timeout_ms: 0, max_body_bytes: 0 } },
      async (h, port) => {
        const c = new RawClient(port);
        c.write(HEAD);
        await once(h, 'open');
        assert.equal(clock.timers, 0, 'no timeout is armed');
        const yielded = once(h, 'yield');
        c.write(chunk(s16([3])));
        await yielded;
        c.write(END);
        assertOk(await h.outcome());
      },
    );
  });

  test('max_body_bytes: one byte more fails; exactly the limit passes', async () => {
    await withHarness({ limits: { max_body_bytes: 10 } }, async (h, port) => {
      new RawClient(port).write(HEAD, chunk(Buffer.alloc(6)), chunk(Buffer.alloc(6)), END);
      assertFailed(await h.outcome(), 413, /^live body: more than 10 bytes \(live_ingest\.max_body_bytes\)$/);
    });
    await withHarness({ limits: { max_body_bytes: 10 } }, async (h, port) => {
      new RawClient(port).write(HEAD, chunk(Buffer.alloc(6)), chunk(Buffer.alloc(4)), END);
      const outcome = await h.outcome();
      assertOk(outcome);
      assert.equal(outcome.bytesReceived, 10);
    });
  });

  // max_chunk_bytes is checked on each piece of payload node:http hands over at once (one chunk's
  // bytes from one socket read), not on the size a chunk declares: node:http does not expose it.
  for (const late of [false, true]) {
    const when = late ? 'opened after the request event' : 'opened in the request event';
    test(`max_chunk_bytes (${when}): a chunk over the limit arriving at once fails, naming the limit`, async () => {
      await withHarness({ late, limits: { max_chunk_bytes: 8 } }, async (h, port) => {
        new RawClient(port).write(HEAD, chunk(s16([1, 2])), chunk(Buffer.alloc(12)), END);
        assertFailed(
          await h.outcome(),
          413,
          /^live body: a chunk of at least 12 bytes is larger than 8 \(live_ingest\.max_chunk_bytes\)$/,
        );
      });
    });

    test(`max_chunk_bytes (${when}): a chunk of exactly the limit passes`, async () => {
      await withHarness({ late, limits: { max_chunk_bytes: 8 } }, async (h, port) => {
        new RawClient(port).write(HEAD, chunk(s16([1, 2, 3, 4])), chunk(s16([5, 6, 7, 8])), END);
        const outcome = await h.outcome();
        assertOk(outcome);
        assert.deepEqual(
          samplesOf(outcome.yields),
          [1, 2, 3, 4, 5, 6, 7, 8].map((v) => v / 32768),
        );
      });
    });
  }

  test('max_chunk_bytes: a chunk over the limit in a later read fails; what came before was yielded', async () => {
    await withHarness({ limits: { max_chunk_bytes: 8 } }, async (h, port) => {
      const c = new RawClient(port);
      c.write(HEAD);
      await once(h, 'open');
      const yielded = once(h, 'yield');
      c.write(chunk(s16([1, 2, 3, 4])));
      await yielded;
      c.write('0020;ext=1\r\n', Buffer.alloc(32));
      const outcome = await h.outcome();
      assertFailed(
        outcome,
        413,
        /^live body: a chunk of at least 32 bytes is larger than 8 \(live_ingest\.max_chunk_bytes\)$/,
      );
      assert.deepEqual(
        samplesOf(outcome.yields),
        [1, 2, 3, 4].map((v) => v / 32768),
      );
    });
  });

  test('max_chunk_bytes: the declared size is not checked, a larger chunk arriving in pieces within the limit passes (the documented bound)', async () => {
    await withHarness({ limits: { max_chunk_bytes: 8 } }, async (h, port) => {
      const c = new RawClient(port);
      // 0xc = 12 bytes declared, over the limit; they come in reads of 6.
      c.write(HEAD, 'c\r\n', Buffer.alloc(6));
      await once(h, 'yield');
      const yielded = once(h, 'yield');
      c.write(Buffer.alloc(6));
      await yielded;
      c.write('\r\n', END);
      const outcome = await h.outcome();
      assertOk(outcome);
      assert.equal(outcome.bytesReceived, 12);
    });
  });

  test('a chunk size that does not fit in 64 bits is malformed framing (node:http refuses it)', async () => {
    await withHarness({ limits: { max_chunk_bytes: 8 } }, async (h, port) => {
      new RawClient(port).write(HEAD, 'fffffffffffffffff');
      assertFailed(
        await h.outcome(),
        400,
        /^live body: malformed chunked framing: Chunk size overflow \(HPE_INVALID_CHUNK_SIZE\)$/,
      );
    });
  });

  test('max_chunk_bytes: a chunk of exactly the limit, spread over many reads, passes', async () => {
    const size = 100_000;
    await withHarness({ limits: { max_chunk_bytes: size } }, async (h, port) => {
      const data = Buffer.alloc(size);
      for (let i = 0; i < size; i += 2) data.writeInt16LE((i % 2000) - 1000, i);
      const c = new RawClient(port);
      c.write(HEAD, `${size.toString(16)}\r\n`);
      await once(h, 'open');
      for (let at = 0; at < size; at += 25_000) {
        const yielded = once(h, 'yield');
        c.write(data.subarray(at, at + 25_000));
        await yielded;
      }
      c.write('\r\n', END);
      const outcome = await h.outcome();
      assertOk(outcome);
      assert.equal(outcome.bytesReceived, size);
      assert.equal(samplesOf(outcome.yields).length, size / 2);
    });
  });
});

describe('live body: broken bodies', () => {
  test("malformed framing fails with node:http's parse error (in the first read and in a later one)", async () => {
    await withHarness({}, async (h, port) => {
      new RawClient(port).write(HEAD, '3\r\nabcX');
      assertFailed(
        await h.outcome(),
        400,
        /^live body: malformed chunked framing: Expected LF after chunk data \(HPE_STRICT\)$/,
      );
    });
    await withHarness({}, async (h, port) => {
      const c = new RawClient(port);
      c.write(HEAD);
      await once(h, 'open');
      // A blank after the size, then a size that is not hexadecimal.
      c.write('2 \r\n\x01\x00\r\n');
      assertFailed(
        await h.outcome(),
        400,
        /^live body: malformed chunked framing: Invalid character in chunk size \(HPE_INVALID_CHUNK_SIZE\)$/,
      );
    });
  });

  test("a parse error handed over by the server's own clientError handler fails the body at once", async () => {
    await withHarness({}, async (h, port) => {
      // As voxd's server does for a streamed answer: the connection is kept so that the answer can
      // report the problem, and node:http does not destroy it with the error.
      h.server.on('clientError', (err: Error, socket) => reportClientError(socket, err));
      const c = new RawClient(port);
      c.write(HEAD);
      await once(h, 'open');
      const yielded = once(h, 'yield');
      c.write(chunk(s16([1])));
      await yielded;
      c.write('zz\r\n');
      const outcome = await h.outcome();
      assertFailed(
        outcome,
        400,
        /^live body: malformed chunked framing: Invalid character in chunk size \(HPE_INVALID_CHUNK_SIZE\)$/,
      );
      assert.deepEqual(samplesOf(outcome.yields), [1 / 32768]);
    });
  });

  for (const how of ['end', 'destroy', 'reset'] as const) {
    test(`the connection closed without the terminating chunk (${how}) fails`, async () => {
      await withHarness({}, async (h, port) => {
        const c = new RawClient(port);
        c.write(HEAD, chunk(s16([9])));
        await once(h, 'yield');
        if (how === 'end') c.socket.end();
        else if (how === 'destroy') c.socket.destroy();
        else c.socket.resetAndDestroy();
        const outcome = await h.outcome();
        assertFailed(
          outcome,
          400,
          /^live body: the connection closed before the terminating zero-length chunk \(2 bytes received/,
        );
      });
    });
  }

  test('the zero-length chunk without the final CRLF is not an end', async () => {
    await withHarness({}, async (h, port) => {
      const c = new RawClient(port);
      c.write(HEAD, chunk(s16([9])), '0\r\n');
      await once(h, 'yield');
      c.socket.end();
      assertFailed(await h.outcome(), 400, /before the terminating zero-length chunk/);
    });
  });

  test('the abort signal fails the iteration with its reason', async () => {
    const controller = new AbortController();
    await withHarness({ signal: controller.signal }, async (h, port) => {
      new RawClient(port).write(HEAD, chunk(s16([4])));
      await once(h, 'yield');
      const reason = new VoxdError('E_CLIENT_GONE', 'client closed the connection');
      controller.abort(reason);
      const outcome = await h.outcome();
      assert.equal(outcome.error, reason);
      assert.deepEqual(outcome.leftovers, []);
    });
  });

  test('an already aborted signal fails at once', async () => {
    const controller = new AbortController();
    controller.abort('gone');
    await withHarness({ signal: controller.signal }, async (h, port) => {
      new RawClient(port).write(HEAD);
      const outcome = await h.outcome();
      assertFailed(outcome, 499, /^live body: aborted$/);
    });
  });

  test('breaking out of the iteration releases everything', async () => {
    const controller = new AbortController();
    await withHarness({ breakAfter: 1, signal: controller.signal }, async (h, port) => {
      new RawClient(port).write(HEAD, chunk(s16([4])));
      const outcome = await h.outcome();
      assertOk(outcome);
      assert.equal(outcome.yields.length, 1);
    });
  });
});

describe('live body: limits from the config', () => {
  test('a model override replaces only the limits it sets', () => {
    const server: LiveIngestConfig = {
      idle_timeout_ms: 30000,
      total_timeout_ms: 600000,
      max_body_bytes: 536870912,
      max_chunk_bytes: 8388608,
      send_timeout_ms: 30000,
    };
    assert.deepEqual(liveIngestLimits(server), server);
    assert.deepEqual(liveIngestLimits(server, { idle_timeout_ms: 0, max_chunk_bytes: undefined }), {
      ...server,
      idle_timeout_ms: 0,
    });
  });
});
