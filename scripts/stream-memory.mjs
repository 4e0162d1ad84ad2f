// What a long streamed answer costs the server when its client reads slowly or not at all, and
// what a long WAV answer peaks at: a real `voxd serve` child with the embedded flite voice, asked
// for 10,000 sentences. Prints the server's VmRSS (and its runners') every 5 s, and the peak.
//   node scripts/stream-memory.mjs slow [seconds]    SSE stream read at 50 KB/s (default settings)
//   node scripts/stream-memory.mjs never [seconds]   SSE stream never read, send_timeout_ms 0
//   node scripts/stream-memory.mjs wav               non-streamed WAV answer: peak vs its size
// VOXD_ENTRY=<path to dist/src/cli/main.js> measures another build (the default is this one's).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const [mode = 'never', secondsArg] = process.argv.slice(2);
const seconds = Number(secondsArg ?? (mode === 'never' ? 300 : 60));
const entry = process.env.VOXD_ENTRY ?? 'dist/src/cli/main.js';
const dir = mkdtempSync(join(tmpdir(), 'voxd-stream-memory-'));
const config = join(dir, 'server.json');
writeFileSync(
  config,
  JSON.stringify({
    ui: false,
    max_input_chars: 0,
    ...(mode === 'never' ? { live_ingest: { send_timeout_ms: 0 } } : {}),
    models: [{ id: 'flite', family: 'flite_tts', task: 'tts', mode: 'streaming' }],
  }),
);

function kb(pid, key) {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)[1]);
  } catch {
    return 0;
  }
}
function children(pid) {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
  } catch {
    return [];
  }
}
const mb = (k) => (k / 1024).toFixed(0);

const child = spawn(process.execPath, [entry, 'serve', '--config', config, '--port', '0'], {
  stdio: ['ignore', 'ignore', 'pipe'],
});
const url = await new Promise((resolve, reject) => {
  let err = '';
  child.stderr.on('data', (d) => {
    err += d;
    const m = /listening on (\S+)/.exec(err);
    if (m) resolve(m[1]);
  });
  child.on('exit', () => reject(new Error(`voxd exited: ${err}`)));
});
const { port, hostname } = new URL(url);
const input = 'Hi you. '.repeat(10_000);

function request(body) {
  const json = JSON.stringify(body);
  return `POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`;
}

try {
  // Warm-up: the model loads and its runner starts, so the figures below are the answer's alone.
  await fetch(`${url}/v1/audio/speech`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'flite', input: 'Warm up.' }),
  }).then((r) => r.arrayBuffer());
  const base = kb(child.pid, 'VmRSS');
  writeFileSync(`/proc/${child.pid}/clear_refs`, '5');
  if (mode === 'wav') {
    const started = performance.now();
    // node:http rather than fetch: the answer takes minutes, past fetch's header timeout.
    const { status, size } = await new Promise((resolve, reject) => {
      const req = httpRequest(
        `${url}/v1/audio/speech`,
        { method: 'POST', headers: { 'content-type': 'application/json' } },
        (res) => {
          let size = 0;
          res.on('data', (d) => {
            size += d.length;
          });
          res.on('end', () => resolve({ status: res.statusCode, size }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify({ model: 'flite', input, response_format: 'wav' }));
    });
    const res = { status };
    const peak = kb(child.pid, 'VmHWM');
    console.log(
      `wav: ${res.status}, answer ${(size / 1048576).toFixed(1)} MB in ${((performance.now() - started) / 1000).toFixed(1)} s; ` +
        `server RSS before ${mb(base)} MB, peak ${mb(peak)} MB (+${mb(peak - base)} MB = ${((peak - base) / (size / 1024)).toFixed(2)}x the answer)`,
    );
  } else {
    const socket = connect(Number(port), hostname);
    let received = 0;
    if (mode === 'never') socket.pause();
    else
      socket.on('data', (d) => {
        received += d.length;
        socket.pause();
        setTimeout(() => socket.resume(), (d.length / 50_000) * 1000);
      });
    socket.on('error', () => {});
    socket.write(request({ model: 'flite', input, stream: true }));
    console.log(`${mode}: server RSS at start ${mb(base)} MB`);
    const started = performance.now();
    for (let t = 5; t <= seconds; t += 5) {
      await sleep(started + t * 1000 - performance.now());
      const runners = children(child.pid).reduce((n, pid) => n + kb(pid, 'VmRSS'), 0);
      console.log(
        `t=${String(t).padStart(4)} s  server RSS ${mb(kb(child.pid, 'VmRSS')).padStart(5)} MB  peak ${mb(kb(child.pid, 'VmHWM')).padStart(5)} MB  runners ${mb(runners).padStart(4)} MB  client read ${(received / 1048576).toFixed(1)} MB`,
      );
    }
    socket.destroy();
  }
} finally {
  child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}
