import { fork } from 'node:child_process';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { WebSocket, WebSocketServer } from 'ws';

if (process.argv[2] === 'client') {
  const c = new WebSocket(process.argv[3]);
  await new Promise((r) => c.on('open', r));
  process.on('message', async (n) => {
    const msg = Buffer.alloc(n, 0x61);
    await new Promise((r) => {
      c.once('message', r);
      c.send(msg, { binary: false });
    });
    process.send('done');
  });
  process.send('ready');
} else {
  const wss = new WebSocketServer({ port: 0, maxPayload: 64 << 20 });
  wss.on('connection', (ws) => {
    ws.on('message', (d) => {
      ws.send('ok');
    });
  });
  await new Promise((r) => wss.on('listening', r));
  const child = fork(new URL(import.meta.url).pathname, ['client', `ws://127.0.0.1:${wss.address().port}`]);
  await new Promise((r) => child.once('message', r));
  for (const n of [22 << 20, 8 << 20, 1 << 20])
    for (let k = 0; k < 3; k++) {
      const h = monitorEventLoopDelay({ resolution: 10 });
      h.enable();
      await new Promise((r) => setTimeout(r, 30));
      await new Promise((r) => {
        child.once('message', r);
        child.send(n);
      });
      await new Promise((r) => setTimeout(r, 30));
      h.disable();
      console.log(n, (h.max / 1e6 - 10).toFixed(1));
    }
  child.kill();
  process.exit(0);
}
