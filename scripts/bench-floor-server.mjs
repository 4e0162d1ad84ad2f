// The floor of bench-main-thread.mjs: plain node:http, in a process of its own, doing the least an
// HTTP server can do with voxd's exchanges. It reads each body whole and answers a line of JSON, or,
// with `x-answer-bytes: N`, N bytes of audio. With `x-runner: file` those bytes come from a runner
// process the way a voxd runner's do (src/engines/runner-bulk.ts): the job over the IPC channel
// (advanced serialization), the runner writes the answer to a file and names it, the server reads
// it back and removes it. No server that takes its requests over Node's HTTP, or its answers from a
// runner process, can spend less on the same exchange. Prints `port N` on stderr once listening.
import { fork } from 'node:child_process';
import { close, open, read, unlink, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

if (process.argv[2] === 'runner') {
  let next = 0;
  process.on('message', ({ id, bytes }) => {
    const file = join(tmpdir(), `voxd-floor-${process.pid}-${next++}`);
    writeFileSync(file, new Uint8Array(bytes));
    process.send({ id, ok: true, file, bytes });
  });
} else {
  const runner = fork(new URL(import.meta.url).pathname, ['runner'], { serialization: 'advanced' });
  const waiting = new Map();
  let nextId = 0;
  runner.on('message', ({ id, file, bytes }) => {
    const into = new Uint8Array(bytes);
    open(file, 'r', (err, fd) => {
      if (err) throw err;
      read(fd, into, 0, bytes, 0, () =>
        close(fd, () =>
          unlink(file, () => {
            waiting.get(id)(into);
            waiting.delete(id);
          }),
        ),
      );
    });
  });
  const fromRunner = (bytes) =>
    new Promise((resolve) => {
      const id = nextId++;
      waiting.set(id, resolve);
      runner.send({ id, text: 'the job', bytes });
    });
  createServer((req, res) => {
    const parts = [];
    req.on('data', (c) => parts.push(c));
    req.on('end', async () => {
      const n = Buffer.concat(parts).length;
      const answer = Number(req.headers['x-answer-bytes'] ?? 0);
      if (answer > 0) {
        const body = req.headers['x-runner'] === 'file' ? await fromRunner(answer) : Buffer.alloc(answer);
        res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': body.length });
        return res.end(body);
      }
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ text: `bytes ${n}` }));
    });
  }).listen(0, '127.0.0.1', function () {
    process.stderr.write(`port ${this.address().port}\n`);
  });
  process.on('SIGTERM', () => {
    runner.kill();
    process.exit(0);
  });
}
