/**
 * Backpressure from the client's socket to the engine: a streamed answer whose client reads slowly
 * or not at all pauses the engine (the fixture records each event it got to send, once the one
 * before was taken) and holds the server's memory flat, while the whole answer would be 640 MB.
 * "Paused" is seen as the engine's count of events standing still (polled until it has not moved
 * for a second), then moving again when the client reads.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fixtureModel, post, startServer, type TestServer, waitUntil } from '../helpers/voxd.js';

// 10 s of tone (the fixture's longest) in 10 events of 16,000 samples, 2,000 times over: 20,000
// events, 640 MB of PCM16 (850 MB as SSE base64).
const CHUNKS = 10;
const REPEAT = 2000;
const TOTAL = CHUNKS * REPEAT;
const PCM_PER_EVENT = 32_000;
const INPUT = 'x'.repeat(250);
/** Growth of the server's RSS allowed over a run: generous, and far below the answer's size. */
const RSS_MARGIN = 40 * 1024 * 1024;
/** Bytes the engine may be ahead of the client: socket buffers on both sides, the stream's 256 KB, the window. */
const LAG_BOUND = 24 * 1024 * 1024;

const rss = () => process.memoryUsage().rss;

/** A client that reads only when told to, and keeps nothing of what it reads (the test shares the server's process). */
class Reader {
  readonly socket: Socket;
  received = 0;
  #reading = false;
  #target = 0;
  #reached: (() => void) | undefined;

  constructor(url: string, body: Record<string, unknown> | Buffer, path: string) {
    const { port, hostname } = new URL(url);
    this.socket = connect(Number(port), hostname);
    this.socket.pause();
    this.socket.on('error', () => {});
    this.socket.on('data', (d: Buffer) => {
      this.received += d.length;
      if (this.#reading && this.received >= this.#target) {
        this.#reading = false;
        this.socket.pause();
        this.#reached?.();
      }
    });
    if (Buffer.isBuffer(body)) {
      // A live route: raw PCM in one chunk, then the terminating chunk.
      this.socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n`);
      this.socket.write(`${body.length.toString(16)}\r\n`);
      this.socket.write(body);
      this.socket.write('\r\n0\r\n\r\n');
      return;
    }
    const json = JSON.stringify(body);
    this.socket.write(
      `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`,
    );
  }

  /** Reads `bytes` more, then stops reading again. */
  read(bytes: number): Promise<void> {
    this.#target = this.received + bytes;
    this.#reading = true;
    const reached = new Promise<void>((resolve) => {
      this.#reached = resolve;
    });
    this.socket.resume();
    return reached;
  }
}

/** Waits until `count` has not changed for a second (bounded), and returns it. */
async function standsStill(what: string, count: () => number): Promise<number> {
  const deadline = Date.now() + 60_000;
  let last = count();
  let still = 0;
  while (still < 10) {
    if (Date.now() > deadline) throw new Error(`${what} never stood still (at ${last})`);
    await sleep(100);
    const now = count();
    still = now === last ? still + 1 : 0;
    last = now;
  }
  return last;
}

const STREAMS: { what: string; path: string; body: Record<string, unknown> | Buffer; perEvent: number }[] = [
  {
    what: 'speech SSE',
    path: '/v1/audio/speech',
    body: { model: 'tts', input: INPUT, stream: true },
    perEvent: Math.ceil(PCM_PER_EVENT / 3) * 4,
  },
  {
    what: 'speech raw PCM',
    path: '/v1/audio/speech',
    body: { model: 'tts', input: INPUT, stream: true, stream_format: 'audio' },
    perEvent: PCM_PER_EVENT,
  },
  {
    what: 'tasks/stream SSE',
    path: '/v1/tasks/stream',
    body: { model: 'tts', request: { text: INPUT }, stream_format: 'sse' },
    perEvent: Math.ceil((PCM_PER_EVENT + 44) / 3) * 4,
  },
  {
    what: 'live speech (raw PCM)',
    path: `/v1/audio/speech/live?model=tts&input=${INPUT}&stream_format=audio`,
    body: Buffer.alloc(3200),
    perEvent: PCM_PER_EVENT,
  },
];

describe('backpressure: a client that does not read pauses the engine', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer({
      live_ingest: { send_timeout_ms: 0 },
      models: [
        fixtureModel('tts', {
          task: 'tts',
          mode: 'streaming',
          default_request_options: { chunks: String(CHUNKS), repeat: String(REPEAT), record_chunks: 'true' },
        }),
      ],
    });
    // The model loads and the first answer's buffers are made before memory is measured.
    const warm = { model: 'tts', request: { text: INPUT, options: { repeat: '1' } } };
    assert.equal((await post(s.url, '/v1/tasks/run', warm)).status, 200);
  });
  after(() => s.close());

  /** Events the current run made: its last chunk's index + 1 (the record drops its oldest half past 50,000). */
  const made = () => {
    const last = s.fixture.record.events.findLast((e) => e.type === 'chunk' || e.type === 'run-start');
    return last?.type === 'chunk' ? last.index + 1 : 0;
  };
  const ended = () => s.fixture.record.of('tts', 'run-end');

  for (const { what, path, body } of STREAMS) {
    test(`${what}: never read (send_timeout_ms 0): the engine stops, memory stays flat, reading resumes it`, async (t) => {
      const before = { rss: rss(), ended: ended().length };
      const reader = new Reader(s.url, body, path);
      try {
        const paused = await standsStill('the engine', made);
        assert.ok(paused > 0 && paused < TOTAL / 10, `${paused} of ${TOTAL} events made while nobody read`);
        const grown = rss() - before.rss;
        t.diagnostic(`paused after ${paused} of ${TOTAL} events; RSS +${(grown / 1048576).toFixed(1)} MB`);
        assert.ok(grown < RSS_MARGIN, `the server grew ${(grown / 1048576).toFixed(1)} MB`);
        // Reading lets the engine go on: it makes more than it had.
        await reader.read(8 * 1024 * 1024);
        await waitUntil('the engine resumes', () => made() > paused);
      } finally {
        reader.socket.destroy();
      }
      await waitUntil('the run ends', () => ended().length > before.ended);
      assert.equal(
        ended().at(-1)!.type === 'run-end' && (ended().at(-1) as { outcome: string }).outcome,
        'aborted',
      );
    });
  }

  for (const { what, path, body, perEvent } of STREAMS.slice(0, 2)) {
    test(`${what}: a slow reader keeps the engine at most a few socket buffers ahead`, async () => {
      const before = { rss: rss() };
      const reader = new Reader(s.url, body, path);
      try {
        for (let step = 0; step < 4; step++) {
          const events = await standsStill('the engine', made);
          const ahead = events * perEvent - reader.received;
          assert.ok(events < TOTAL / 10, `${events} of ${TOTAL} events made`);
          assert.ok(
            ahead < LAG_BOUND,
            `the engine is ${(ahead / 1048576).toFixed(1)} MB ahead of the client`,
          );
          const grown = rss() - before.rss;
          assert.ok(grown < RSS_MARGIN, `the server grew ${(grown / 1048576).toFixed(1)} MB`);
          await reader.read(4 * 1024 * 1024);
        }
        assert.ok(reader.received >= 16 * 1024 * 1024);
      } finally {
        reader.socket.destroy();
      }
    });
  }
});
