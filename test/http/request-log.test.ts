import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { RawClient } from '../helpers/raw-http.js';
import { suiteServer } from '../helpers/suite-server.js';
import { fixtureModel, post, waitUntil, withServer } from '../helpers/voxd.js';

test('--log logs one line per request; log_request_body adds JSON bodies', async () => {
  await withServer(
    { log_request_body: true, models: [fixtureModel('m')] },
    { overrides: { log: true } },
    async (s) => {
      assert.equal((await post(s.url, '/v1/tasks/run', { model: 'm', text: 'hello-body' })).status, 200);
      assert.equal((await post(s.url, '/v1/tasks/run', { model: 'nope' })).status, 404);
      const logs = s.logs.join('\n');
      assert.match(logs, /POST \/v1\/tasks\/run body: \{"model":"m","text":"hello-body"\}/);
      assert.match(logs, /POST \/v1\/tasks\/run 200 [\d.]+ ms/);
      assert.match(logs, /POST \/v1\/tasks\/run 404 [\d.]+ ms/);
    },
  );
});

test('without --log nothing is logged per request', async () => {
  await withServer({ log_request_body: true, models: [fixtureModel('m')] }, async (s) => {
    await post(s.url, '/v1/tasks/run', { model: 'm', text: 'quiet' });
    assert.doesNotMatch(s.logs.join('\n'), /quiet|POST/);
  });
});

/**
 * A client that leaves is not a fault: with --log its request gets one line, 499 and the phase it
 * left in, and never a stack trace (`    at ` lines), whatever it was doing.
 */
describe('a client that closes its connection is logged in one line, without a stack', () => {
  const s = suiteServer(
    { models: [fixtureModel('m'), fixtureModel('live', { mode: 'streaming' })] },
    { overrides: { log: true } },
  );
  // Each case reads only its own lines.
  beforeEach(() => {
    s.logs.length = 0;
  });

  /**
   * The one log entry for `path` since the last call, once it is there; fails on a second entry or
   * any stack line.
   */
  async function onlyLine(path: string): Promise<string> {
    const entries = () => s.logs.filter((entry) => entry.includes(`POST ${path}`));
    await waitUntil(`the log line of ${path}`, () => entries().some((e) => e.startsWith(`POST ${path} 499`)));
    assert.equal(entries().length, 1, entries().join('\n---\n'));
    assert.doesNotMatch(s.logs.join('\n'), /^\s+at /m);
    return s.logs.splice(0).find((entry) => entry.includes(`POST ${path}`))!;
  }

  const runStarts = (model: string) => s.fixture.record.of(model, 'run-start').length;

  /**
   * Sends the head of a POST to `path` announcing `length` bytes of `contentType` with Expect:
   * 100-continue, waits for node's 100 (it answers as it hands the request to voxd, which then reads
   * the body), writes `start` of the body and closes the connection.
   */
  async function leaveWhileSending(path: string, contentType: string, length: number, start: string) {
    const client = new RawClient(s.url);
    await client.write(
      `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: ${contentType}\r\n`,
      `Content-Length: ${length}\r\nExpect: 100-continue\r\n\r\n`,
    );
    await client.until('100 Continue', () => client.raw.includes('100 Continue'));
    await client.write(start);
    client.socket.destroy();
  }

  test('while sending a JSON body', async () => {
    await leaveWhileSending('/v1/tasks/run', 'application/json', 100, '{"model":"m",');
    assert.match(
      await onlyLine('/v1/tasks/run'),
      /^POST \/v1\/tasks\/run 499 [\d.]+ ms: client closed the connection while sending the request body$/,
    );
  });

  test('while sending a multipart upload', async () => {
    const part = '--XX\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\nRIFF';
    await leaveWhileSending('/v1/audio/transcriptions', 'multipart/form-data; boundary=XX', 10000, part);
    assert.match(
      await onlyLine('/v1/audio/transcriptions'),
      /^POST \/v1\/audio\/transcriptions 499 [\d.]+ ms: client closed the connection while sending the request body$/,
    );
  });

  test('while its request runs, and while it receives a stream', async () => {
    const running = new RawClient(s.url);
    const body = JSON.stringify({ model: 'm', text: 'x', options: { hang: true } });
    await running.write(
      `POST /v1/tasks/run HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    await waitUntil('the request runs', () => runStarts('m') === 1);
    running.socket.destroy();
    assert.match(
      await onlyLine('/v1/tasks/run'),
      /^POST \/v1\/tasks\/run 499 [\d.]+ ms: client closed the connection while waiting for the response$/,
    );

    const streaming = new RawClient(s.url);
    const sse = JSON.stringify({ model: 'live', text: 'x', stream_format: 'sse', options: { hang: true } });
    await streaming.write(
      `POST /v1/tasks/stream HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${sse.length}\r\n\r\n${sse}`,
    );
    await streaming.until('the stream headers', () => streaming.response?.status === 200);
    await waitUntil('the streamed request runs', () => runStarts('live') === 1);
    streaming.socket.destroy();
    assert.match(
      await onlyLine('/v1/tasks/stream'),
      /^POST \/v1\/tasks\/stream 499 [\d.]+ ms: client closed the connection while receiving the response$/,
    );
  });

  test('control: an engine fault is still logged with its stack', async () => {
    assert.equal((await post(s.url, '/v1/tasks/run', { model: 'm', options: { run_fail: 1 } })).status, 500);
    const fault = s.logs.find((entry) => entry.startsWith('POST /v1/tasks/run failed:'));
    assert.ok(fault, s.logs.join('\n'));
    assert.match(fault, /run_fail/);
    assert.match(fault, /^\s+at /m);
  });
});
