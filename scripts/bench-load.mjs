// Load generator for scripts/bench-engines.mjs, run as its own process so that client work does
// not count as server event-loop lag. It uses node:http with keep-alive rather than fetch: on a
// 2-core machine the client shares the CPU with the server, and fetch cost about 2 ms of CPU per
// request here (node:http about a quarter of that), which showed up as lost server throughput.
// The body is read from <body-file> once and the same bytes are sent with every request, sent as
// <content-type> (application/json unless given; a multipart/form-data type must name the body's
// boundary). Prints the number of completed requests, and the client's CPU per request on stderr.
// Usage: node scripts/bench-load.mjs <url> <body-file> <concurrency> <seconds> [content-type]
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';

const [url, bodyFile, concurrency, seconds, contentType = 'application/json'] = process.argv.slice(2);
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

await Promise.all(
  Array.from({ length: Number(concurrency) }, async () => {
    while (performance.now() < deadline) {
      await post();
      done++;
    }
  }),
);
agent.destroy();
const cpu = process.cpuUsage(cpuStart);
console.error(`load generator: ${((cpu.user + cpu.system) / 1000 / done).toFixed(2)} ms CPU per request`);
console.log(done);
