/** The transport limits docs/api.md promises, on a real server over raw sockets. */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { fixtureModel, startServer, type TestServer } from '../helpers/voxd.js';

/** Sends `bytes` on a fresh connection and collects everything until the server closes it (or `untilText` shows). */
function exchange(url: string, bytes: string, untilText?: RegExp): Promise<string> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    let text = '';
    const socket = connect(Number(port), '127.0.0.1', () => socket.write(bytes));
    socket.on('data', (chunk) => {
      text += chunk.toString('latin1');
      if (untilText?.test(text)) {
        socket.destroy();
        resolve(text);
      }
    });
    socket.on('close', () => resolve(text));
    socket.on('error', reject);
  });
}

describe('transport', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer({ models: [fixtureModel('m')] });
  });
  after(() => s.close());

  test('headers over 16 KiB: 431 and a closed connection', async () => {
    const answer = await exchange(
      s.url,
      `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(17 * 1024)}\r\n\r\n`,
    );
    assert.match(answer, /^HTTP\/1\.1 431 /);
  });

  test('pipelined requests on one keep-alive connection are answered in order', async () => {
    const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`;
    const answer = await exchange(s.url, get('/health') + get('/nope') + get('/ready'), /"status":"ready"/);
    const statuses = [...answer.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1]);
    assert.deepEqual(statuses, ['200', '404', '200']);
    assert.ok(answer.indexOf('"status":"ok"') < answer.indexOf('unknown endpoint: /nope'));
    assert.ok(answer.indexOf('unknown endpoint: /nope') < answer.indexOf('"status":"ready"'));
  });

  test('a Content-Length that is not a number is a 400; the server keeps serving', async () => {
    const answer = await exchange(
      s.url,
      'POST /v1/tasks/run HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: abc\r\n\r\n{}',
    );
    assert.match(answer, /^HTTP\/1\.1 400 /);
    assert.match(
      await exchange(s.url, 'GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
      /^HTTP\/1\.1 200 /,
    );
  });
});
