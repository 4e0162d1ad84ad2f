/**
 * Bodies within a server budget, over real HTTP on loopback: the server-wide budget of body bytes
 * held at once (max_inflight_body_bytes), the JSON limit below the upload limit (max_json_body_bytes),
 * the whole-body deadline (body_deadline_ms) against a client trickling its body, the connection cap
 * (max_connections), and the memory of a body killed for its size given back at once.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { bodyBudgetOf } from '../../../src/http/transport/body-budget.js';
import { COLLECT_DELAY_MS, MemoryRelease } from '../../../src/util/release-memory.js';
import { paddedJson } from '../../helpers/budget.js';
import { releasesAfter } from '../../helpers/memory-release.js';
import { RawClient, type RawResponse } from '../../helpers/raw-http.js';
import { sseEvents, typeOf } from '../../helpers/sse.js';
import { fixtureModel, get, ManualClock, transcribe, waitUntil, withServer } from '../../helpers/voxd.js';
import { wavHeader } from '../wav-helpers.js';

const MIB = 1024 * 1024;

/**
 * A /v1/tasks/run JSON body of exactly `bytes` bytes: a `pad` field the route ignores fills it, with
 * strings of 512 KiB (one string may be at most 1 MiB).
 */
const paddedBody = (bytes: number) => paddedJson('{"model":"asr","text":"x","pad":["', bytes);

const head = (length: number | 'chunked', path = '/v1/tasks/run') =>
  `POST ${path} HTTP/1.1\r\nHost: voxd\r\nContent-Type: application/json\r\n${
    length === 'chunked' ? 'Transfer-Encoding: chunked' : `Content-Length: ${length}`
  }\r\n\r\n`;

/** One chunk of a chunked body. */
const chunk = (bytes: Buffer) =>
  Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, Buffer.from('\r\n')]);

function errorBody(res: RawResponse): { message: string; type: string; code: string } {
  return JSON.parse(res.body.toString('utf8')).error;
}

/** This process's peak resident memory (kB) since `resetPeak()`. */
const peakKb = () => Number(/VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))![1]);
const rssKb = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))![1]);
const resetPeak = () => writeFileSync('/proc/self/clear_refs', '5');

describe('max_inflight_body_bytes', () => {
  test('parallel large bodies: those past the budget get 503 with Retry-After before their body is read, the others complete, and memory stays bounded', async () => {
    const BODY = 40 * MIB;
    const CLIENTS = 8;
    await withServer(
      { max_json_body_bytes: 64 * MIB, max_inflight_body_bytes: 100 * MIB, models: [fixtureModel('asr')] },
      async (s) => {
        const body = paddedBody(BODY);
        const base = rssKb();
        resetPeak();
        const clients = Array.from({ length: CLIENTS }, () => new RawClient(s.url));
        // Every head first: two bodies fit the budget, the other six are refused on their head alone.
        await Promise.all(clients.map((c) => c.write(head(BODY))));
        await waitUntil(
          'six of the eight are answered without sending their body',
          () => clients.filter((c) => c.response).length === CLIENTS - 2,
          10_000,
        );
        const refused = clients.filter((c) => c.response);
        for (const client of refused) {
          const res = await client.finished();
          assert.equal(res.status, 503, res.body.toString());
          assert.equal(res.headers['retry-after'], '1');
          assert.equal(res.headers['connection'], 'close');
          const error = errorBody(res);
          assert.equal(error.type, 'server_busy');
          assert.equal(error.code, 'body_budget');
          assert.match(error.message, /max_inflight_body_bytes=104857600/);
        }
        const admitted = clients.filter((c) => !refused.includes(c));
        await Promise.all(admitted.map((c) => c.write(body)));
        for (const client of admitted) {
          await client.until('the answer', () => client.response?.complete === true, 30_000);
          assert.equal(client.response!.status, 200, client.response!.body.toString());
          client.socket.destroy();
        }
        // Two bodies of 40 MiB at a time, read, decoded and parsed: far below eight at once.
        const grownMb = (peakKb() - base) / 1024;
        assert.ok(grownMb < 500, `peak grew ${grownMb.toFixed(0)} MB over ${(base / 1024).toFixed(0)} MB`);
        // The budget was given back: the same bodies go through again.
        const again = new RawClient(s.url);
        await again.write(head(BODY), body);
        await again.until('the answer', () => again.response?.complete === true, 30_000);
        assert.equal(again.response!.status, 200);
        again.socket.destroy();
      },
    );
  });

  test('a chunked body takes its bytes as they arrive: past the budget it is refused part-way, and the budget is given back', async () => {
    await withServer(
      { max_json_body_bytes: 64 * MIB, max_inflight_body_bytes: 4 * MIB, models: [fixtureModel('asr')] },
      async (s) => {
        const budget = bodyBudgetOf(s.voxd.server)!;
        const client = new RawClient(s.url);
        await client.write(head('chunked'), chunk(paddedBody(3 * MIB).subarray(0, 3 * MIB)));
        await waitUntil('the server holds the first 3 MiB', () => budget.inUse === 3 * MIB);
        // Another request now holds 3 MiB: 2 MiB more do not fit.
        const other = new RawClient(s.url);
        await other.write(head(2 * MIB), paddedBody(2 * MIB));
        const refused = await other.finished();
        assert.equal(refused.status, 503);
        assert.equal(errorBody(refused).code, 'body_budget');
        // The first grows past the budget itself.
        await client.write(chunk(Buffer.alloc(2 * MIB, 'a'))).catch(() => {});
        const res = await client.finished();
        assert.equal(res.status, 503, res.body.toString());
        assert.equal(errorBody(res).code, 'body_budget');
        // Both ended: the whole budget is free again.
        await waitUntil('the budget is given back', () => budget.inUse === 0);
        const body = paddedBody(4 * MIB);
        const last = new RawClient(s.url);
        await last.write(head(body.length), body);
        await last.until('the answer', () => last.response?.complete === true);
        assert.equal(last.response!.status, 200, last.response!.body.toString());
        last.socket.destroy();
      },
    );
  });
});

describe('max_json_body_bytes', () => {
  test('the default is 32 MiB for JSON, refused from the Content-Length alone, while uploads keep max_request_body_bytes', async () => {
    await withServer({ models: [fixtureModel('asr')] }, async (s) => {
      const client = new RawClient(s.url);
      await client.write(head(32 * MIB + 1));
      const res = await client.finished();
      assert.equal(res.status, 413);
      assert.equal(errorBody(res).message, 'request body exceeds max_json_body_bytes=33554432');
      // An upload larger than the JSON limit is still taken (the WAV header comes first).
      const wav = Buffer.alloc(34 * MIB);
      wavHeader({ sampleRate: 16000, channels: 1, bits: 16 }, wav.length - 44).copy(wav);
      const upload = await transcribe(s.url, 'asr', wav);
      assert.equal(upload.status, 200, upload.body.toString().slice(0, 300));
    });
  });

  test('max_request_body_bytes still wins when it is lower, and the message names it', async () => {
    await withServer({ max_request_body_bytes: 1000, models: [fixtureModel('asr')] }, async (s) => {
      const client = new RawClient(s.url);
      await client.write(head(1001));
      const res = await client.finished();
      assert.equal(res.status, 413);
      assert.equal(errorBody(res).message, 'request body exceeds max_request_body_bytes=1000');
    });
  });
});

describe('body_deadline_ms', () => {
  const DEADLINE_MS = 10_000;

  /** Sends `first`, then a byte a second until the deadline: a trickle body_timeout_ms never catches. */
  async function trickle(clock: ManualClock, client: RawClient, first: string): Promise<RawResponse> {
    const armed = clock.timers;
    await client.write(first);
    await waitUntil('the body deadline is armed', () => clock.timers > armed);
    for (let second = 1; second < DEADLINE_MS / 1000; second++) {
      await client.write('a');
      clock.advance(1000);
      assert.equal(client.response, undefined, `answered after ${second} s`);
    }
    await client.write('a');
    clock.advance(1000);
    return client.finished();
  }

  function assertLate(res: RawResponse): void {
    assert.equal(res.status, 408, res.body.toString());
    assert.equal(res.headers['connection'], 'close');
    const error = errorBody(res);
    assert.equal(error.type, 'timeout_error');
    assert.match(error.message, new RegExp(`body_deadline_ms=${DEADLINE_MS}`));
  }

  test('a JSON or multipart body trickled a byte a second is answered 408 at the deadline and its connection closed', async () => {
    const clock = new ManualClock();
    await withServer(
      { body_deadline_ms: DEADLINE_MS, models: [fixtureModel('asr')] },
      { clock },
      async (s) => {
        const json = new RawClient(s.url);
        assertLate(await trickle(clock, json, `${head(1000)}{"model":"asr","text":"`));
        assert.equal(json.closed, true);
        const part = '--XB\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\nRIFF';
        const multipart = new RawClient(s.url);
        assertLate(
          await trickle(
            clock,
            multipart,
            `POST /v1/audio/transcriptions HTTP/1.1\r\nHost: voxd\r\nContent-Type: multipart/form-data; boundary=XB\r\nContent-Length: 100000\r\n\r\n${part}`,
          ),
        );
        assert.equal((await get(s.url, '/health')).status, 200);
      },
    );
  });

  test('the live routes keep their live_ingest limits: a live body longer than body_deadline_ms is served', async () => {
    const clock = new ManualClock();
    await withServer(
      { body_deadline_ms: DEADLINE_MS, models: [fixtureModel('asr-live', { mode: 'streaming' })] },
      { clock },
      async (s) => {
        const client = new RawClient(s.url);
        await client.write(
          'POST /v1/audio/transcriptions/live?model=asr-live HTTP/1.1\r\nHost: voxd\r\nTransfer-Encoding: chunked\r\n\r\n',
          chunk(Buffer.alloc(1600)),
        );
        for (let second = 0; second < (2 * DEADLINE_MS) / 1000; second++) {
          await client.write(chunk(Buffer.alloc(32)));
          clock.advance(1000);
        }
        await client.write('0\r\n\r\n');
        const res = await client.finished();
        assert.equal(res.status, 200, res.body.toString());
        assert.deepEqual(sseEvents(res.body).slice(-2).map(typeOf), ['transcript.text.done', '[DONE]']);
      },
    );
  });
});

describe('max_connections', () => {
  test('a connection past the cap is answered 503 with Retry-After at once and closed; one that frees makes room', async () => {
    await withServer({ max_connections: 3, models: [fixtureModel('asr')] }, async (s) => {
      const open = Array.from({ length: 3 }, () => new RawClient(s.url));
      // Each is known to the server once it has answered a request on it (kept alive).
      for (const client of open) {
        await client.write('GET /health HTTP/1.1\r\nHost: voxd\r\n\r\n');
        await client.until('the health answer', () => client.response?.complete === true);
      }
      // The fourth sends nothing: the answer comes before any request.
      const fourth = new RawClient(s.url);
      const res = await fourth.finished();
      assert.equal(res.status, 503);
      assert.equal(res.headers['retry-after'], '1');
      assert.equal(res.headers['connection'], 'close');
      const error = errorBody(res);
      assert.equal(error.type, 'server_busy');
      assert.equal(error.code, 'too_many_connections');
      assert.match(error.message, /max_connections=3/);
      open[0]!.socket.destroy();
      await waitUntil('the server let the closed connections go', async () => {
        const count = await new Promise<number>((resolve) =>
          s.voxd.server.getConnections((_, n) => resolve(n)),
        );
        return count === 2;
      });
      assert.equal((await get(s.url, '/health')).status, 200);
      for (const client of open) client.socket.destroy();
    });
  });
});

describe('memory of a body killed for its size', () => {
  test('is owed to the memory release, which gives it back right after the request, not at the next one', async () => {
    const clock = new ManualClock();
    clock.advance(60_000);
    const memory = new MemoryRelease(clock, () => {});
    const LIMIT = 80 * MIB;
    const limits = { max_request_body_bytes: LIMIT, max_json_body_bytes: LIMIT };
    await withServer({ ...limits, models: [fixtureModel('asr')] }, { memory }, async (s) => {
      const client = new RawClient(s.url);
      await client.write(head('chunked'), chunk(paddedBody(MIB).subarray(0, MIB - 2)));
      // Chunked: the limit is found only as the bytes arrive. The body reaches the limit exactly,
      // then a last small chunk crosses it, so the server has read everything when it answers.
      const piece = chunk(Buffer.alloc(MIB, 'a'));
      for (let sent = MIB - 2; sent + MIB <= LIMIT; sent += MIB) await client.write(piece);
      await client.write(chunk(Buffer.alloc(64, 'a')));
      const res = await client.finished();
      assert.equal(res.status, 413, res.body.toString());
      await waitUntil('the request has ended on the server', () => memory.running === 0);
      releasesAfter(clock, memory, COLLECT_DELAY_MS);
    });
  });
});
