// The request path's own cost: voxd's no-op route (POST /v1/tasks/run on a fixture model, which
// answers at once) against a plain node:http server that reads the same JSON body and answers the
// same JSON, both driven by autocannon in this process at 32 connections, in the same run,
// interleaved. Prints a Markdown table for docs/performance.md. On Linux the table also gives each
// server's CPU time per request (user + system, all its threads, from /proc/<pid>/stat), which this
// shared 2-core machine's noise moves far less than requests/s.
// Usage: npm run build && node scripts/bench-http.mjs [seconds-per-round] [--rounds=N] [--cpu-prof=DIR]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';

const args = process.argv.slice(2);
const SECONDS = Number(args.find((a) => /^\d+$/.test(a)) ?? 5);
const ROUNDS = Number(args.find((a) => a.startsWith('--rounds='))?.slice(9) ?? 3);
const PROFILE = args.find((a) => a.startsWith('--cpu-prof='))?.slice(11);
const CONNECTIONS = 32;
const dir = mkdtempSync(join(tmpdir(), 'voxd-bench-http-'));
const BODY = JSON.stringify({ model: 'asr', request: { text: 'x' } });

// The plain server: read the body, parse it, answer a JSON object of about voxd's size.
const PLAIN = `
const http = require('node:http');
const reply = JSON.stringify({ text: JSON.stringify({ slot: 0, session: 'asr#1', generation: 1, load_options: {}, session_options: {}, task: 'asr', text: 'x', options: {} }), timing: { wall_ms: 0.05 } });
http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    JSON.parse(Buffer.concat(chunks).toString('utf8'));
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(reply) });
    res.end(reply);
  });
}).listen(0, '127.0.0.1', function () { console.error('listening on http://127.0.0.1:' + this.address().port); });
`;

function start(argv, env = process.env) {
  const child = spawn(process.execPath, argv, { stdio: ['ignore', 'ignore', 'pipe'], env });
  return new Promise((resolve, reject) => {
    let err = '';
    child.stderr.on('data', (d) => {
      err += d;
      const m = /listening on (http:\S+)/.exec(err);
      if (m) resolve({ child, url: m[1] });
    });
    child.on('exit', (code) => reject(new Error(`exited ${code}: ${err}`)));
  });
}

const config = join(dir, 'server.json');
writeFileSync(
  config,
  JSON.stringify({ ui: false, models: [{ id: 'asr', family: 'fixture', path: '.', task: 'asr' }] }),
);
const prof = PROFILE ? [`--cpu-prof`, `--cpu-prof-dir=${PROFILE}`] : [];
const servers = [
  { name: 'plain node:http', ...(await start(['-e', PLAIN])) },
  {
    name: 'voxd POST /v1/tasks/run (fixture)',
    // The CLI ends with libc _exit, which writes no CPU profile: profiled, voxd runs through
    // scripts/serve-for-profile.mjs, the same server exiting normally.
    ...(await start(
      PROFILE
        ? [...prof, 'scripts/serve-for-profile.mjs', config]
        : ['dist/src/cli/main.js', 'serve', '--config', config, '--port', '0', '--enable-fixture'],
    )),
  },
];

/** CPU time the process has used, in µs (utime + stime from /proc); undefined where there is no /proc. */
function cpuMicros(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100; // clock ticks of 10 ms
  } catch {
    return undefined;
  }
}

const run = (url) =>
  new Promise((resolve, reject) =>
    autocannon(
      {
        url: `${url}/v1/tasks/run`,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: BODY,
        connections: CONNECTIONS,
        duration: SECONDS,
      },
      (err, result) => (err ? reject(err) : resolve(result)),
    ),
  );

for (const s of servers) {
  s.rounds = [];
  await run(s.url); // warm-up round, not counted
}
for (let i = 0; i < ROUNDS; i++) {
  for (const s of servers) {
    const before = cpuMicros(s.child.pid);
    const result = await run(s.url);
    const after = cpuMicros(s.child.pid);
    result.cpuPerRequest = before === undefined ? undefined : (after - before) / result.requests.total;
    s.rounds.push(result);
  }
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const plain = median(servers[0].rounds.map((r) => r.requests.average));
console.log(
  `| server (${CONNECTIONS} connections) | requests/s (median) | rounds | vs plain | p99 latency (ms, median) | CPU per request (µs, median) | non-2xx |`,
);
console.log('|---|---:|---|---:|---:|---:|---:|');
for (const s of servers) {
  const rps = median(s.rounds.map((r) => r.requests.average));
  const p99 = median(s.rounds.map((r) => r.latency.p99));
  const bad = s.rounds.reduce((n, r) => n + r.non2xx + r.errors, 0);
  const cpu = s.rounds.some((r) => r.cpuPerRequest === undefined)
    ? 'n/a'
    : median(s.rounds.map((r) => r.cpuPerRequest)).toFixed(0);
  console.log(
    `| ${s.name} | ${rps.toFixed(0)} | ${s.rounds.map((r) => r.requests.average.toFixed(0)).join(', ')} | ${(rps / plain).toFixed(2)} | ${p99} | ${cpu} | ${bad} |`,
  );
}
for (const s of servers) {
  s.child.kill('SIGTERM');
  await new Promise((resolve) => s.child.on('exit', resolve));
}
rmSync(dir, { recursive: true, force: true });
