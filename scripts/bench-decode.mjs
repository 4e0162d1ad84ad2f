// What one compressed upload costs the server: a real `voxd serve` child with a fixture `asr` model,
// one multipart upload of FILE to /v1/audio/transcriptions; prints the status, the seconds, VmRSS
// before and the peak (VmHWM after writing 5 to clear_refs), and the start of the answer.
//   node scripts/bench-decode.mjs FILE ['{"max_audio_seconds":30}']   (after npm run build)
// docs/reliability.md (ffmpeg confinement) has its figures for the FLAC bomb and a 20 min MP3.
import { spawn } from 'node:child_process';
import { mkdtempSync, openAsBlob, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';

const [file, extra] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: node scripts/bench-decode.mjs FILE [server.json keys as JSON]\n');
  process.exit(2);
}
const dir = mkdtempSync(join(tmpdir(), 'voxd-bench-decode-'));
const config = join(dir, 'server.json');
writeFileSync(
  config,
  JSON.stringify({
    ui: false,
    models: [{ id: 'asr', family: 'fixture', path: '.', task: 'asr' }],
    ...(extra ? JSON.parse(extra) : {}),
  }),
);
const main = new URL('../dist/src/cli/main.js', import.meta.url);
const child = spawn(process.execPath, [main.pathname, 'serve', '--config', config, '--port', '0'], {
  env: { ...process.env, VOXD_ENABLE_FIXTURE: '1', VOXD_DATA_DIR: dir },
  stdio: ['ignore', 'ignore', 'pipe'],
});
try {
  let stderr = '';
  const url = await new Promise((resolve, reject) => {
    child.once('exit', () => reject(new Error(`voxd exited: ${stderr}`)));
    child.stderr.on('data', (d) => {
      stderr += d;
      const match = /listening on (http:\S+)/.exec(stderr);
      if (match) resolve(match[1]);
    });
  });
  const kb = (key) =>
    Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))[1]);
  writeFileSync(`/proc/${child.pid}/clear_refs`, '5');
  const before = kb('VmRSS');
  const form = new FormData();
  form.set('model', 'asr');
  form.set('file', await openAsBlob(file), basename(file));
  const started = Date.now();
  const res = await fetch(`${url}/v1/audio/transcriptions`, { method: 'POST', body: form });
  const text = await res.text();
  const result = {
    status: res.status,
    seconds: (Date.now() - started) / 1000,
    rss_before_mb: Math.round(before / 1024),
    peak_mb: Math.round(kb('VmHWM') / 1024),
    body: text.slice(0, 300),
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
} finally {
  child.kill('SIGTERM');
  await new Promise((resolve) => (child.exitCode === null ? child.once('exit', resolve) : resolve()));
  rmSync(dir, { recursive: true, force: true });
}
