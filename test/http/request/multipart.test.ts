/**
 * Multipart bodies cut anywhere (issue 10, defect 1: a body ending inside a file part killed the
 * process), malformed, or left by the client: every route that takes multipart answers a 400 or
 * stops, the server stays healthy, and no spooled file is left behind.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { readMultipart, SPOOL_THRESHOLD } from '../../../src/http/request/multipart.js';
import { RawClient } from '../../helpers/raw-http.js';
import {
  errorOf,
  fixtureModel,
  get,
  type HttpResult,
  reportOf,
  request,
  startServer,
  type TestServer,
  tempDir,
  waitUntil,
} from '../../helpers/voxd.js';
import { buildWav, smallWav } from '../wav-helpers.js';

const BOUNDARY = 'XB';
const CONTENT_TYPE = `multipart/form-data; boundary=${BOUNDARY}`;

type Part = { name: string; value: string | Buffer; filename?: string };

function multipart(parts: Part[]): Buffer {
  const out: Buffer[] = [];
  for (const part of parts) {
    const disposition = `form-data; name="${part.name}"${part.filename ? `; filename="${part.filename}"` : ''}`;
    out.push(Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: ${disposition}\r\n\r\n`, 'latin1'));
    out.push(typeof part.value === 'string' ? Buffer.from(part.value) : part.value);
    out.push(Buffer.from('\r\n'));
  }
  out.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  return Buffer.concat(out);
}

/**
 * Every place where a part's framing changes: boundaries, header ends, content starts, and a
 * middle. Cuts end before the close delimiter `--XB--` is whole: without its last CRLF (the
 * optional epilogue) the body is complete.
 */
function cutPoints(body: Buffer): number[] {
  const points = new Set<number>([1, body.length - 3, body.length - 4]);
  for (let at = body.indexOf(`--${BOUNDARY}`); at >= 0; at = body.indexOf(`--${BOUNDARY}`, at + 1)) {
    for (const p of [at, at + 2, at + 4]) points.add(p);
    const headEnd = body.indexOf('\r\n\r\n', at);
    if (headEnd > 0) for (const p of [headEnd, headEnd + 2, headEnd + 4, headEnd + 40]) points.add(p);
  }
  return [...points].filter((p) => p > 0 && p < body.length - 2).sort((a, b) => a - b);
}

const ROUTES = [
  { path: '/v1/audio/transcriptions', files: 1 },
  { path: '/v1/audio/transcriptions/details', files: 1 },
  { path: '/v1/batches/transcriptions', files: 2 },
];

test("a part joined in memory is the request's own (read in place), unless it lies in node's shared pool", async () => {
  for (const [size, owned] of [
    [160_044, true],
    [100, false],
  ] as const) {
    const file = Buffer.alloc(size, 7);
    const body = multipart([
      { name: 'model', value: 'm' },
      { name: 'file', value: file, filename: 'a.wav' },
    ]);
    // Several socket-sized chunks, as a body arrives.
    const chunks = Array.from({ length: Math.ceil(body.length / 65536) }, (_, i) =>
      body.subarray(i * 65536, (i + 1) * 65536),
    );
    const req = Object.assign(Readable.from(chunks), {
      headers: { 'content-type': CONTENT_TYPE, 'content-length': String(body.length) },
      // What node sets once the whole body arrived: its 'close' is then no client leaving.
      complete: true,
    });
    const parsed = await readMultipart(req as unknown as IncomingMessage, { limit: 1 << 24, idleMs: 0 });
    try {
      const { source } = parsed.files[0]!;
      assert.ok('bytes' in source, 'kept in memory');
      assert.equal(source.owned, owned, `${size} bytes`);
      assert.ok(Buffer.from(source.bytes).equals(file));
      if (owned) assert.equal(source.bytes.buffer.byteLength, size, 'an ArrayBuffer of its own');
    } finally {
      await parsed.dispose();
    }
  }
});

describe('multipart bodies cut, malformed or abandoned', () => {
  let server: TestServer;
  let spoolRoot: string;
  const previousTmp = process.env['TMPDIR'];
  const spooled = () => readdirSync(spoolRoot).filter((name) => name.startsWith('voxd-upload-'));
  const send = (path: string, body: Buffer): Promise<HttpResult> =>
    request(server.url, 'POST', path, { body, headers: { 'content-type': CONTENT_TYPE } });

  before(async () => {
    // Spooled uploads go under os.tmpdir(), which follows TMPDIR: a folder of this test's own.
    spoolRoot = tempDir('voxd-spool-');
    mkdirSync(spoolRoot, { recursive: true });
    process.env['TMPDIR'] = spoolRoot;
    server = await startServer({ models: [fixtureModel('asr')] });
  });
  after(async () => {
    await server?.close();
    if (previousTmp === undefined) delete process.env['TMPDIR'];
    else process.env['TMPDIR'] = previousTmp;
    rmSync(spoolRoot, { recursive: true, force: true });
  });

  const bodyFor = (files: number, wav: Buffer) =>
    multipart([
      { name: 'model', value: 'asr' },
      ...Array.from({ length: files }, (_, i) => ({ name: 'file', value: wav, filename: `${i}.wav` })),
    ]);

  for (const route of ROUTES) {
    test(`${route.path}: the whole body works; cut at every part boundary it is a 400, and the server stays healthy`, async () => {
      const body = bodyFor(route.files, smallWav(800));
      const whole = await send(route.path, body);
      assert.equal(whole.status, 200, whole.body.toString());
      for (const at of cutPoints(body)) {
        const res = await send(route.path, body.subarray(0, at));
        const message = errorOf(res, 400, 'invalid_request_error');
        assert.ok(/malformed multipart|required/.test(message), `cut at ${at}: ${message}`);
      }
      assert.equal((await get(server.url, '/health')).status, 200);
      assert.equal((await send(route.path, body)).status, 200, 'a normal request after the cuts');
    });
  }

  test('the issue reproduction: a body ending inside a file part, on every route, any field name', async () => {
    for (const route of ROUTES) {
      for (const name of ['file', 'other']) {
        const body = Buffer.from(
          `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"; filename="a.wav"\r\n\r\nRIFF`,
          'latin1',
        );
        const message = errorOf(await send(route.path, body), 400, 'invalid_request_error');
        assert.equal(message, 'malformed multipart request: the body ended inside a part');
      }
    }
    assert.equal((await get(server.url, '/health')).status, 200);
  });

  test('a large upload is spooled to disk and removed after the request; cut mid-file, it is removed too', async () => {
    const big = smallWav(SPOOL_THRESHOLD); // 2 MiB of samples: past the spool threshold
    const body = bodyFor(1, big);
    const whole = await send('/v1/audio/transcriptions', body);
    assert.equal(whole.status, 200, whole.body.toString());
    const cut = await send('/v1/audio/transcriptions', body.subarray(0, body.length - SPOOL_THRESHOLD / 2));
    errorOf(cut, 400, 'invalid_request_error');
    assert.deepEqual(spooled(), [], 'no spooled upload is left');
  });

  test('a spooled upload reaches the engine whole: its length and loudness as sent, past several spool batches', async () => {
    // 3 MiB of samples whose loudness grows through the file: a batch lost, doubled or cut changes
    // the length, or the RMS, or both.
    const frames = (3 * SPOOL_THRESHOLD) / 2;
    const sample = (f: number) => (f / frames) * Math.sin(f / 3);
    const wav = buildWav({ sampleRate: 16000, channels: 1, bits: 16, frames, sample });
    let sum = 0;
    for (let f = 0; f < frames; f++) sum += (Math.round(sample(f) * 32767) / 32768) ** 2;
    const report = reportOf(await send('/v1/audio/transcriptions', bodyFor(1, wav)));
    assert.equal(report.audio.samples, frames);
    assert.equal(report.audio.rms, Math.round(Math.sqrt(sum / frames) * 1e4) / 1e4);
    assert.deepEqual(spooled(), []);
  });

  test('a client that leaves in the middle of a spooled upload leaves nothing behind', async () => {
    const body = bodyFor(1, smallWav(SPOOL_THRESHOLD));
    const client = new RawClient(server.url);
    await client.write(
      `POST /v1/audio/transcriptions HTTP/1.1\r\nHost: x\r\nContent-Type: ${CONTENT_TYPE}\r\nContent-Length: ${body.length}\r\n\r\n`,
      body.subarray(0, body.length - 1000),
    );
    await waitUntil('the upload is being spooled', () => spooled().length === 1);
    client.socket.destroy();
    await waitUntil('the spooled upload is removed', () => spooled().length === 0);
    assert.equal((await get(server.url, '/health')).status, 200);
  });

  test('a form field longer than 1 MiB is a 400 naming it, not truncated', async () => {
    const body = multipart([
      { name: 'model', value: 'asr' },
      { name: 'prompt', value: 'x'.repeat((1 << 20) + 1) },
      { name: 'file', value: smallWav(), filename: 'a.wav' },
    ]);
    const message = errorOf(await send('/v1/audio/transcriptions', body), 400, 'invalid_request_error');
    assert.ok(message.startsWith('"prompt": a form field may hold at most 1048576 bytes'), message);
  });

  test('malformed framing: a bad part header and a missing boundary are 400s', async () => {
    const badHeader = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition\r\n\r\nx\r\n--${BOUNDARY}--\r\n`);
    errorOf(await send('/v1/audio/transcriptions', badHeader), 400, 'invalid_request_error');
    const noBoundary = await request(server.url, 'POST', '/v1/audio/transcriptions', {
      body: 'x',
      headers: { 'content-type': 'multipart/form-data' },
    });
    errorOf(noBoundary, 400, 'invalid_request_error');
    assert.equal((await get(server.url, '/health')).status, 200);
  });
});
