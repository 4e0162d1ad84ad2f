// Benchmark of the realtime WebSocket (/v1/realtime) on one `voxd serve` child process: N sessions
// stream 16 kHz PCM at real time in 100 ms appends and commit every 2 s of audio (manual commit;
// server VAD is scripts/bench-realtime-vad.mjs), their starts spread over 2 s; measured from the client side, the time from each commit
// to its completed transcript, and from voxd's /metrics, the event-loop lag and the resident memory.
// Then 500 sessions open and idle: memory per idle session, and no slot held. Not a test: it prints
// Markdown for docs/performance.md.
// Usage: npm run build && node scripts/bench-realtime.mjs [--seconds=8] [--engine=fixture|pocketsphinx] [sessions...]

import { WebSocket } from 'ws';
import { startServeChild } from './bench-server.mjs';

const args = process.argv.slice(2);
const opt = (name, fallback) => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback;
const SECONDS = Number(opt('seconds', '8'));
const ENGINE = opt('engine', 'fixture');
const COUNTS = args.filter((a) => /^\d+$/.test(a)).map(Number);
const SESSIONS = COUNTS.length ? COUNTS : [1, 8, 32, 64];
const IDLE_SESSIONS = 500;

const MODEL =
  ENGINE === 'pocketsphinx'
    ? { id: 'asr', family: 'pocketsphinx_asr', task: 'asr', slots: 2 }
    : { id: 'asr', family: 'fixture', path: '.', task: 'asr', slots: 4 };

const { base, child } = await startServeChild({
  max_connections: 2000,
  max_realtime_sessions: 1000,
  models: [MODEL],
});
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function metrics() {
  const text = await (await fetch(`${base}/metrics`)).text();
  const value = (name) => Number(text.match(new RegExp(`^${name} (\\S+)$`, 'm'))?.[1] ?? Number.NaN);
  const activeSlots = [...text.matchAll(/^voxd_active_slots\{[^}]*\} (\S+)$/gm)].reduce(
    (n, m) => n + Number(m[1]),
    0,
  );
  return {
    rss: value('process_resident_memory_bytes'),
    lagP99: value('nodejs_eventloop_lag_p99_seconds'),
    sessions: value('voxd_realtime_sessions'),
    activeSlots,
  };
}

/** 16 kHz PCM: a 300 Hz tone with pauses, so a real engine has something to decode. */
const pcm = Buffer.alloc(3200 * 2);
for (let i = 0; i < 3200; i++)
  pcm.writeInt16LE(Math.round(6000 * Math.sin((2 * Math.PI * 300 * i) / 16000)), i * 2);
const piece = pcm.toString('base64'); // 100 ms

function open() {
  const ws = new WebSocket(`${base.replace('http', 'ws')}/v1/realtime?model=asr`);
  return new Promise((resolve, reject) => {
    ws.once('error', reject);
    ws.on('message', function first(data) {
      if (JSON.parse(data.toString()).type !== 'session.created') return;
      ws.off('message', first);
      ws.send(
        JSON.stringify({
          type: 'session.update',
          session: { audio: { input: { format: { type: 'audio/pcm', rate: 16000 } } } },
        }),
      );
      resolve(ws);
    });
  });
}

/**
 * One session streaming for `seconds`, starting after `offsetMs` (sessions of a round start spread
 * over a turn's 2 s, as users do, rather than all committing at the same instant): the ms from each
 * commit to its completed event.
 */
async function stream(seconds, offsetMs = 0) {
  await sleep(offsetMs);
  const ws = await open();
  const latencies = [];
  const committed = [];
  ws.on('message', (data) => {
    const e = JSON.parse(data.toString());
    if (e.type === 'conversation.item.input_audio_transcription.completed')
      latencies.push(performance.now() - committed.shift());
    if (e.type === 'conversation.item.input_audio_transcription.failed') throw new Error(JSON.stringify(e));
  });
  const start = performance.now();
  // Pieces go out on a real-time schedule: piece k at k * 100 ms after the start.
  for (let k = 0; k < seconds * 10; k++) {
    const due = start + k * 100;
    await sleep(Math.max(0, due - performance.now()));
    ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: piece }));
    if (k % 20 === 19) {
      committed.push(performance.now());
      ws.send(JSON.stringify({ type: 'input_audio_buffer.commit' }));
    }
  }
  while (committed.length) await sleep(5);
  ws.close();
  return latencies;
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : Number.NaN;
};

// The engine's own time for one 2 s turn, alone: subtracted from the latencies to leave voxd's.
await stream(2); // warm-up: the model loads
const alone = [];
for (let i = 0; i < 5; i++) alone.push(...(await stream(2)));
const engineMs = pct(alone, 50);

console.log(`Engine ${ENGINE}: one 2 s turn alone, commit to transcript p50 ${engineMs.toFixed(1)} ms\n`);
console.log(
  '| sessions | turns | commit → transcript p50 / p99 ms | less one turn alone: p50 / p99 ms | event-loop lag p99 ms |',
);
console.log('|---:|---:|---:|---:|---:|');
for (const n of SESSIONS) {
  const results = await Promise.all(Array.from({ length: n }, (_, i) => stream(SECONDS, (2000 * i) / n)));
  const all = results.flat();
  const m = await metrics();
  const p50 = pct(all, 50);
  const p99 = pct(all, 99);
  console.log(
    `| ${n} | ${all.length} | ${p50.toFixed(1)} / ${p99.toFixed(1)} | ${(p50 - engineMs).toFixed(1)} / ${(p99 - engineMs).toFixed(1)} | ${(m.lagP99 * 1000).toFixed(1)} |`,
  );
}

// Idle sessions: opened, configured, silent.
await sleep(1000);
const before = await metrics();
const idle = [];
for (let i = 0; i < IDLE_SESSIONS; i++) idle.push(await open());
await sleep(1000);
const after = await metrics();
console.log(
  `\n${IDLE_SESSIONS} idle sessions: ${after.sessions} open, ${after.activeSlots} slots held, RSS ${(before.rss / 2 ** 20).toFixed(1)} → ${(after.rss / 2 ** 20).toFixed(1)} MiB (${((after.rss - before.rss) / IDLE_SESSIONS / 1024).toFixed(1)} KiB a session)`,
);
for (const ws of idle) ws.close();
child.kill('SIGTERM');
