/**
 * Half-closed clients: a request sent, then the client's sending side shut (`socket.end()`, as
 * HTTP/1.0 clients, `nc -N` and `shutdown(SHUT_WR)` do), is still answered on every route group;
 * an HTTP/1.1 one may first read an interim `102 Processing` (the server's probe). A client that
 * really leaves while its request waits is still found out and its run cancelled.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setImmediate as turn } from 'node:timers/promises';
import { connect as tlsConnect } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { encodeWav } from '../../../src/audio/wav-encode.js';
import { parseResponse, RawClient } from '../../helpers/raw-http.js';
import { fixtureModel, startServer, type TestServer, waitUntil } from '../../helpers/voxd.js';

const WAV = encodeWav({
  samples: Float32Array.from({ length: 8000 }, (_, i) => 0.3 * Math.sin(i / 5)),
  sampleRate: 16000,
  channels: 1,
});

const BOUNDARY = 'voxd-half-close';
const MULTIPART = Buffer.concat([
  Buffer.from(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\nasr\r\n` +
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\n`,
  ),
  WAV,
  Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
]);

interface Case {
  what: string;
  method: 'GET' | 'POST';
  path: string;
  body?: Buffer;
  type?: string;
  /**
   * The model whose run waits for the test's gate: the answer can only come after the server saw
   * the client's FIN (which cancelled the request before half-closed clients were answered).
   */
  gated?: string;
  /** A raw stream whose headers went out before the FIN: nothing probes it (see half-close.ts). */
  unprobed?: boolean;
  /** Checks the body of the 200. */
  check?: (body: Buffer) => void;
}

const json = (value: unknown) => Buffer.from(JSON.stringify(value));

const CASES: Case[] = [
  { what: 'the UI page', method: 'GET', path: '/', check: (b) => assert.match(b.toString(), /<html/i) },
  { what: 'a UI file', method: 'GET', path: '/ui/app.js' },
  {
    what: 'the model list',
    method: 'GET',
    path: '/v1/models',
    check: (b) => assert.equal(JSON.parse(b.toString()).object, 'list'),
  },
  { what: 'the installed models', method: 'GET', path: '/v1/ui/models/installed' },
  {
    what: 'a task run',
    method: 'POST',
    path: '/v1/tasks/run',
    body: json({ model: 'tts', request: { text: 'half closed' } }),
    gated: 'tts',
  },
  {
    what: 'speech (WAV)',
    method: 'POST',
    path: '/v1/audio/speech',
    body: json({ model: 'tts', input: 'half closed', response_format: 'wav' }),
    gated: 'tts',
    check: (b) => assert.equal(b.subarray(0, 4).toString(), 'RIFF'),
  },
  {
    what: 'a speech stream (SSE)',
    method: 'POST',
    path: '/v1/audio/speech',
    body: json({ model: 'tts-stream', input: 'half closed', stream: true }),
    gated: 'tts-stream',
    check: (b) => assert.ok(b.toString().endsWith('data: [DONE]\n\n'), b.toString().slice(-80)),
  },
  {
    what: 'a raw speech stream (PCM)',
    method: 'POST',
    path: '/v1/audio/speech',
    body: json({ model: 'tts-stream', input: 'half closed', stream: true, stream_format: 'audio' }),
    gated: 'tts-stream',
    unprobed: true,
    check: (b) => assert.ok(b.length > 1000, `${b.length} bytes`),
  },
  {
    what: 'a transcription (multipart upload)',
    method: 'POST',
    path: '/v1/audio/transcriptions',
    body: MULTIPART,
    type: `multipart/form-data; boundary=${BOUNDARY}`,
    gated: 'asr',
    check: (b) => assert.equal(typeof JSON.parse(b.toString()).text, 'string'),
  },
  {
    what: 'a management route (unload)',
    method: 'POST',
    path: '/v1/models/unload',
    body: json({ id: 'asr' }),
  },
];

/** The final response in `raw`, after any interim (1xx) ones; and how many interim ones came. */
function finalResponse(raw: Buffer) {
  let rest = raw;
  let interim = 0;
  while (/^HTTP\/1\.[01] 1\d\d /.test(rest.subarray(0, 16).toString('latin1'))) {
    rest = rest.subarray(rest.indexOf('\r\n\r\n') + 4);
    interim++;
  }
  const response = parseResponse(rest);
  // An HTTP/1.0 stream has no framing: its body is all that came before the server closed.
  if (response && response.headers['content-length'] === undefined && !response.headers['transfer-encoding'])
    response.body = rest.subarray(rest.indexOf('\r\n\r\n') + 4);
  return { response, interim };
}

describe('half-closed clients are answered', () => {
  let s: TestServer;
  const gates = mkdtempSync(join(tmpdir(), 'voxd-half-close-'));
  const gate = join(gates, 'run');
  before(async () => {
    const options = { run_gate: gate };
    s = await startServer({
      ui: true,
      ui_management: true,
      models: [
        fixtureModel('asr', { default_request_options: options }),
        fixtureModel('tts', { task: 'tts', default_request_options: options }),
        fixtureModel('tts-stream', {
          task: 'tts',
          mode: 'streaming',
          default_request_options: { ...options, chunks: '3' },
        }),
      ],
    });
  });
  after(async () => {
    writeFileSync(gate, '');
    await s.close();
    rmSync(gates, { recursive: true, force: true });
  });

  for (const version of ['1.1', '1.0'] as const) {
    for (const c of CASES) {
      test(`HTTP/${version}: ${c.what}`, async () => {
        const client = new RawClient(s.url);
        const head = [
          `${c.method} ${c.path} HTTP/${version}`,
          'Host: x',
          ...(c.body
            ? [`Content-Type: ${c.type ?? 'application/json'}`, `Content-Length: ${c.body.length}`]
            : []),
        ].join('\r\n');
        rmSync(gate, { force: true });
        const started = c.gated ? s.fixture.record.of(c.gated, 'run-start').length : 0;
        await client.write(`${head}\r\n\r\n`, ...(c.body ? [c.body] : []));
        client.socket.end();
        if (c.gated) {
          const model = c.gated;
          await waitUntil('the run starts', () => s.fixture.record.of(model, 'run-start').length > started);
          // HTTP/1.1: the server's probe, a 102 or an SSE comment (or, before half-closed clients were answered, the close)
          // shows that it saw the FIN; HTTP/1.0 gets no probe, and the FIN that followed the body
          // has been read by the time the run started and a few turns went by.
          if (version === '1.1' && !c.unprobed)
            await client.until(
              'the FIN seen',
              () => client.closed || client.raw.includes('102 Processing') || client.raw.includes(':\n\n'),
            );
          for (let i = 0; i < 20; i++) await turn();
          writeFileSync(gate, '');
        }
        await client.ended('the answer and the connection close');
        const { response, interim } = finalResponse(client.raw);
        assert.ok(
          response?.complete,
          `no whole answer: ${JSON.stringify(client.raw.toString('latin1').slice(0, 300))}`,
        );
        assert.equal(response.status, 200, response.body.toString().slice(0, 300));
        // No interim response may go to an HTTP/1.0 client.
        if (version === '1.0') assert.equal(interim, 0);
        c.check?.(response.body);
      });
    }
  }

  test('a client that closes its socket while its request runs is found out: the run is cancelled', async () => {
    rmSync(gate, { force: true });
    const before = s.fixture.record.of('asr', 'run-end').length;
    const client = new RawClient(s.url);
    const body = json({ model: 'asr', request: { text: 'x', options: { hang: 'true' } } });
    await client.write(
      `POST /v1/tasks/run HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
      body,
    );
    await waitUntil('the run starts', () => s.fixture.record.of('asr', 'run-start').length > before);
    // A FIN, as a half-close sends: only the server's probe tells that nobody is left to answer.
    client.socket.destroy();
    await waitUntil('the run is cancelled', () => s.fixture.record.of('asr', 'run-end').length > before);
    const end = s.fixture.record.of('asr', 'run-end').at(-1) as { outcome: string };
    assert.equal(end.outcome, 'aborted');
  });
});

describe('half-closed clients over HTTPS', () => {
  const TLS = fileURLToPath(new URL('../../../../test/fixtures/tls/', import.meta.url));
  let s: TestServer;
  const gates = mkdtempSync(join(tmpdir(), 'voxd-half-close-tls-'));
  const gate = join(gates, 'run');
  before(async () => {
    s = await startServer({
      tls_cert_file: `${TLS}cert.pem`,
      tls_key_file: `${TLS}key.pem`,
      models: [fixtureModel('tts', { task: 'tts', default_request_options: { run_gate: gate } })],
    });
  });
  after(async () => {
    writeFileSync(gate, '');
    await s.close();
    rmSync(gates, { recursive: true, force: true });
  });

  test('a TLS client that ends its side after the request gets its answer', async () => {
    const { port } = new URL(s.url);
    const socket = tlsConnect({ port: Number(port), host: '127.0.0.1', ca: readFileSync(`${TLS}cert.pem`) });
    const chunks: Buffer[] = [];
    socket.on('data', (d: Buffer) => chunks.push(d));
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.on('error', () => {});
    await new Promise<void>((resolve) => socket.once('secureConnect', () => resolve()));
    const body = json({ model: 'tts', request: { text: 'secure and half closed' } });
    const started = s.fixture.record.of('tts', 'run-start').length;
    socket.write(
      `POST /v1/tasks/run HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    socket.end(body);
    await waitUntil('the run starts', () => s.fixture.record.of('tts', 'run-start').length > started);
    // The probe shows the server saw the client's end (the close, before half-closed clients were answered).
    await waitUntil(
      'the FIN seen',
      () => Buffer.concat(chunks).includes('102 Processing') || socket.destroyed,
    );
    writeFileSync(gate, '');
    await closed;
    const { response } = finalResponse(Buffer.concat(chunks));
    assert.ok(response?.complete, Buffer.concat(chunks).toString('latin1').slice(0, 300));
    assert.equal(response.status, 200);
  });
});
