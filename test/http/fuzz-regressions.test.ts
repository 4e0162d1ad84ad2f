/**
 * Requests the fuzzer (test/fuzz/fuzz.ts, `npm run fuzz`) found to break voxd, replayed byte for
 * byte over real sockets: each once answered 500 and logged an internal error, and must now be an
 * ordinary 4xx (or a stream's client error), with the server still serving afterwards.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { acceptable, generate, runCase, startTarget } from '../fuzz/fuzz.js';
import { RawClient } from '../helpers/raw-http.js';
import { sseEvents, typeOf } from '../helpers/sse.js';
import { fixtureModel, post, startServer, type TestServer } from '../helpers/voxd.js';
import { smallWav } from './wav-helpers.js';

describe('fuzz regressions', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer({
      models: [
        fixtureModel('asr'),
        fixtureModel('diar', { task: 'diar' }),
        fixtureModel('asr-live', { mode: 'streaming', live_ingest: { idle_timeout_ms: 250 } }),
      ],
    });
  });
  after(() => s?.close());

  /** Nothing logged as a fault inside voxd, and a plain request is still served. */
  async function healthy(): Promise<void> {
    const faults = s.records.filter((r) => r.level === 'error');
    assert.deepEqual(
      faults.map((r) => `${r.msg} ${r.err?.message ?? ''}`),
      [],
      'no request was a fault inside voxd',
    );
    const res = await post(s.url, '/v1/tasks/run', { model: 'asr', text: 'x' });
    assert.equal(res.status, 200, res.body.toString());
  }

  function form(boundary: string, parts: string[], file: Buffer): Buffer {
    const head = parts.map((p) => `--${boundary}\r\n${p}\r\n`).join('');
    return Buffer.concat([
      Buffer.from(head, 'latin1'),
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\n`,
        'latin1',
      ),
      file,
      Buffer.from(`\r\n--${boundary}--\r\n`, 'latin1'),
    ]);
  }

  // seed 7, case 893: busboy names a part with name="" (or no name) undefined, and the
  // list-field pass called .endsWith on it.
  for (const disposition of ['form-data; name=""', 'form-data']) {
    test(`a multipart part with Content-Disposition: ${disposition} is ignored, not a 500`, async () => {
      const body = form(
        'B',
        [
          `Content-Disposition: ${disposition}\r\n\r\nv`,
          'Content-Disposition: form-data; name="model"\r\n\r\ndiar',
        ],
        smallWav(),
      );
      const client = new RawClient(s.url);
      await client.write(
        'POST /v1/audio/transcriptions HTTP/1.1\r\nHost: voxd\r\nConnection: close\r\n',
        `Content-Type: multipart/form-data; boundary=B\r\nContent-Length: ${body.length}\r\n\r\n`,
        body,
      );
      const res = await client.finished();
      assert.equal(res.status, 200, res.body.toString());
      await healthy();
    });
  }

  test('a file part without a name is no file: the upload is a 400 asking for one', async () => {
    const boundary = 'C';
    const body = Buffer.concat([
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nasr\r\n` +
          `--${boundary}\r\nContent-Disposition: form-data; filename="a.wav"\r\n\r\n`,
        'latin1',
      ),
      smallWav(),
      Buffer.from(`\r\n--${boundary}--\r\n`, 'latin1'),
    ]);
    const client = new RawClient(s.url);
    await client.write(
      'POST /v1/audio/transcriptions HTTP/1.1\r\nHost: voxd\r\nConnection: close\r\n',
      `Content-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${body.length}\r\n\r\n`,
      body,
    );
    const res = await client.finished();
    assert.equal(res.status, 400, res.body.toString());
    await healthy();
  });

  // seed 7, cases 2455 and 8778: a malformed chunked body whose data (or the empty rest after its
  // final CRLF CRLF) parsed cleanly from a later "empty line", so the framing check started there
  // and reported "lost track of the chunked framing" (a server_error) instead of the client's fault.
  const malformedLiveBodies: [string, string][] = [
    ['a size line with a leading blank', '2\r\nab\r\n 1\r\nx\r\n0\r\n\r\n'],
    ['a chunk longer than its size, holding an empty line', '3\r\nab\r\n\r\nxyz\r\n0\r\n\r\n'],
  ];
  for (const [what, body] of malformedLiveBodies) {
    test(`a live body with ${what} ends in a client error, never a server error`, async () => {
      const client = new RawClient(s.url);
      await client.write(
        'POST /v1/audio/transcriptions/live?model=asr-live HTTP/1.1\r\nHost: voxd\r\nTransfer-Encoding: chunked\r\n\r\n',
        body,
      );
      await client.ended();
      const res = client.response;
      if (res && res.status === 200) {
        const events = sseEvents(res.body);
        const errors = events.filter((e) => typeOf(e) === 'error');
        for (const e of errors)
          assert.equal(
            (e as { error: { type: string } }).error.type,
            'invalid_request_error',
            JSON.stringify(e),
          );
      } else if (res) assert.ok(res.status >= 400 && res.status < 500, `status ${res.status}`);
      await healthy();
    });
  }
});

// The fuzzer's own cases, on its own server: a change to the generator changes what these indexes
// send, so the hand-written requests above are the regressions proper; this keeps the fuzzer's
// generate/run/acceptable path itself under test.
describe('fuzz regressions: the original cases', () => {
  let s: TestServer;
  before(async () => {
    s = await startTarget();
  });
  after(() => s?.close());

  test("the fuzzer cases that found these replay, on the fuzzer's server, to acceptable outcomes", async () => {
    for (const k of [893, 2455, 4535, 8778]) {
      const outcome = await runCase(s.url, generate(7, k));
      assert.ok(acceptable(outcome), `case ${k}: ${outcome.status} ${outcome.detail ?? ''}`);
    }
    const faults = s.records.filter((r) => r.level === 'error');
    assert.deepEqual(
      faults.map((r) => r.msg),
      [],
    );
  });
});
