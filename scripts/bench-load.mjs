// Load generator for scripts/bench-engines.mjs, run as its own process so that client work does
// not count as server event-loop lag. It uses node:http with keep-alive rather than fetch: on a
// 2-core machine the client shares the CPU with the server, and fetch cost about 2 ms of CPU per
// request here (node:http about a quarter of that), which showed up as lost server throughput.
// The body is read from <body-file> once and the same bytes are sent with every request, sent as
// <content-type> (application/json unless given; a multipart/form-data type must name the body's
// boundary). Prints the number of completed requests, and the client's CPU per request on stderr.
// --socket: instead of node:http, each connection is a plain TCP socket that writes the request
// (headers and body) as one buffer built once, and reads the answer by its Content-Length or its
// chunks: the least a client can do, for benchmarks that charge the server only
// (bench-raw-engine.mjs); node:http's client cost 0.9-1.2 ms of CPU for a 260 KB request.
// Usage: node scripts/bench-load.mjs <url> <body-file> <concurrency> <seconds> [content-type] [--socket]
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { connect } from 'node:net';

const SOCKET = process.argv.includes('--socket');
const [url, bodyFile, concurrency, seconds, contentType = 'application/json'] = process.argv
  .slice(2)
  .filter((a) => a !== '--socket');
const body = readFileSync(bodyFile);
const agent = new Agent({ keepAlive: true, maxSockets: Number(concurrency) });
const deadline = performance.now() + Number(seconds) * 1000;
const cpuStart = process.cpuUsage();
let done = 0;

function post() {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': contentType, 'content-length': body.length },
      },
      (res) => {
        // The body is kept only when the request failed, for the error message.
        const failed = res.statusCode !== 200 ? [] : undefined;
        res.on('data', (chunk) => failed?.push(chunk));
        res.on('end', () =>
          failed
            ? reject(new Error(`HTTP ${res.statusCode}: ${Buffer.concat(failed).toString().slice(0, 500)}`))
            : resolve(),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** A keep-alive connection that sends the prebuilt request and resolves with each answer's end. */
function socketClient() {
  const target = new URL(url);
  const head = Buffer.from(
    `POST ${target.pathname}${target.search} HTTP/1.1\r\nHost: ${target.host}\r\n` +
      `Content-Type: ${contentType}\r\nContent-Length: ${body.length}\r\n\r\n`,
  );
  const message = Buffer.concat([head, body]);
  const socket = connect(Number(target.port), target.hostname);
  socket.setNoDelay(true);
  let pending;
  let buffered = Buffer.alloc(0);
  const fail = (err) => pending?.reject(err);
  socket.on('error', fail);
  socket.on('close', () => fail(new Error('the server closed the connection')));
  socket.on('data', (chunk) => {
    buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
    let end;
    try {
      end = answerEnd(buffered);
    } catch (err) {
      fail(err);
      return;
    }
    if (end < 0) return;
    const status = Number(buffered.toString('latin1', 9, 12));
    const answer = buffered.subarray(0, end);
    buffered = buffered.subarray(end);
    const { resolve, reject } = pending;
    pending = undefined;
    if (status === 200) resolve();
    else reject(new Error(`HTTP ${status}: ${answer.toString().slice(0, 500)}`));
  });
  return {
    post: () =>
      new Promise((resolve, reject) => {
        pending = { resolve, reject };
        socket.write(message);
      }),
    close: () => socket.destroy(),
  };
}

/** Where the first answer in `bytes` ends (its length, or its last chunk), -1 while incomplete. */
function answerEnd(bytes) {
  const headEnd = bytes.indexOf('\r\n\r\n');
  if (headEnd < 0) return -1;
  const head = bytes.toString('latin1', 0, headEnd).toLowerCase();
  const length = /\r\ncontent-length: *(\d+)/.exec(head);
  if (length) {
    const end = headEnd + 4 + Number(length[1]);
    return bytes.length >= end ? end : -1;
  }
  // Chunked: walk the chunk sizes to the zero one, then its trailers (voxd sends timing trailers).
  let at = headEnd + 4;
  for (;;) {
    const line = bytes.indexOf('\r\n', at);
    if (line < 0) return -1;
    const size = Number.parseInt(bytes.toString('latin1', at, line), 16);
    if (Number.isNaN(size)) throw new Error(`bad chunk size line: ${bytes.toString('latin1', at, line)}`);
    if (size === 0) {
      const end = bytes.indexOf('\r\n\r\n', line);
      return end < 0 ? -1 : end + 4;
    }
    at = line + 2 + size + 2;
    if (at > bytes.length) return -1;
  }
}

await Promise.all(
  Array.from({ length: Number(concurrency) }, async () => {
    const client = SOCKET ? socketClient() : { post, close: () => {} };
    while (performance.now() < deadline) {
      await client.post();
      done++;
    }
    client.close();
  }),
);
agent.destroy();
const cpu = process.cpuUsage(cpuStart);
console.error(`load generator: ${((cpu.user + cpu.system) / 1000 / done).toFixed(2)} ms CPU per request`);
console.log(done);
