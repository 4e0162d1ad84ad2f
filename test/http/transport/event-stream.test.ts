/**
 * EventStream on a real response: a write after the stream ended is refused with a typed error
 * (node would report it as an 'error' event on the response, which unhandled ends the process).
 */
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { EventStream } from '../../../src/http/transport/event-stream.js';
import { withDeadline } from '../../helpers/voxd.js';

test('a write after the stream ended is refused, not emitted as an error event on the response', async () => {
  let handled!: (res: ServerResponse) => void;
  const responded = new Promise<ServerResponse>((resolve) => {
    handled = resolve;
  });
  const server = createServer((_req, res) => handled(res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const fetched = fetch(`http://127.0.0.1:${port}/`).then((r) => r.text());
    const res = await withDeadline(responded, 'the request', 10_000);
    // No 'error' listener on the response, as in a route: an emitted error would end this process.
    const out = new EventStream(res, 'sse', 0, new AbortController().signal);
    await out.event({ n: 1 });
    await out.done();
    await assert.rejects(out.event({ n: 2 }), { code: 'E_INTERNAL' });
    assert.equal(await withDeadline(fetched, 'the body', 10_000), 'data: {"n":1}\n\ndata: [DONE]\n\n');
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});
