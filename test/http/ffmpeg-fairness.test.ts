/**
 * One client cannot keep the ffmpeg children (issue 22): with every slot held by one API key and
 * more of its requests queued, another key's request is served as soon as one slot is freed, ahead
 * of the first key's queue. ffmpeg here is a stand-in that holds its slot until the test opens the
 * gate its input names, so every ordering is forced by the test.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { standInFfmpeg } from '../helpers/stand-in-ffmpeg.js';
import {
  errorOf,
  fixtureModel,
  type HttpResult,
  request,
  tempDir,
  waitUntil,
  withDeadline,
  withServer,
} from '../helpers/voxd.js';

const KEY_A = 'sk-voxd-client-a';
const KEY_B = 'sk-voxd-client-b';

let dir: string;
let spool: string;
const previousTmp = process.env['TMPDIR'];

before(() => {
  dir = tempDir('voxd-fair-');
  spool = join(dir, 'tmp');
  mkdirSync(spool);
  process.env['TMPDIR'] = spool;
  // Answers the startup probe; a decode waits for the file its input names, then fails. The input
  // is read as ffmpeg reads it, through /dev/stdin (fd 0's own offset is past the written bytes).
  standInFfmpeg(
    dir,
    'gated-ffmpeg',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template
    'gate=$(head -n 1 /dev/stdin)\nwhile [ ! -e "$gate" ] && [ ! -e "${gate%/*}/all" ]; do sleep 0.02; done\necho "gate $gate" >&2\nexit 1',
  );
});
after(() => {
  if (previousTmp === undefined) delete process.env['TMPDIR'];
  else process.env['TMPDIR'] = previousTmp;
  rmSync(dir, { recursive: true, force: true });
});

/** The stand-in ffmpeg children of this process (the server runs in it). */
function children(): number {
  let count = 0;
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid && stat.includes('(gated-ffmpeg)')) count++;
    } catch {
      // the process ended while being read
    }
  }
  return count;
}

test('while one key holds every ffmpeg slot and queues more, a second key gets the next freed slot', async () => {
  const size = Math.max(2, availableParallelism());
  const gates = join(dir, 'gates');
  mkdirSync(gates);
  await withServer(
    {
      api_keys: [
        { key: KEY_A, scope: 'inference' },
        { key: KEY_B, scope: 'inference' },
      ],
      // The stand-in makes no output while it waits; that deadline is not what is tested here.
      ffmpeg_decode_stall_ms: 0,
      models: [fixtureModel('asr')],
    },
    {
      parallel: true,
      overrides: { ffmpeg_path: join(dir, 'gated-ffmpeg') },
      // Whatever happened, every stand-in is let go before the server closes.
      beforeClose: [() => writeFileSync(join(gates, 'all'), '')],
    },
    async (server) => {
      const send = (key: string, gate: string): Promise<HttpResult> => {
        const form = new FormData();
        form.set('model', 'asr');
        // Not WAV, so it goes to ffmpeg; its first line names the gate the stand-in waits for.
        form.set('file', new Blob([`${join(gates, gate)}\n`]), 'x.mp3');
        return request(server.url, 'POST', '/v1/audio/transcriptions', {
          body: form,
          headers: { Authorization: `Bearer ${key}` },
        });
      };
      const a = Array.from({ length: size }, (_, i) => send(KEY_A, `a${i}`));
      await waitUntil('key A holds every slot', () => children() === size);
      const aQueued = send(KEY_A, 'a-queued');
      await waitUntil('key A queues one more', () => server.voxd.codec.waiting === 1);
      const b = send(KEY_B, 'b');
      // Waiting for its slot, not only received: its upload is written to a temporary file first.
      await waitUntil("key B's upload waits too", () => server.voxd.codec.waiting === 2);

      writeFileSync(join(gates, 'a0'), '');
      errorOf(await a[0]!, 400, 'invalid_request_error');
      await waitUntil('the freed slot is taken', () => children() === size);
      // It was B's, although A's request waited longer: only B's gate opens, and B is answered.
      writeFileSync(join(gates, 'b'), '');
      const message = errorOf(await withDeadline(b, "B's answer", 30_000), 400, 'invalid_request_error');
      assert.match(message, /gate .*\/b\)$/, message);

      for (let i = 1; i < size; i++) writeFileSync(join(gates, `a${i}`), '');
      writeFileSync(join(gates, 'a-queued'), '');
      for (const res of [...a, aQueued]) errorOf(await res, 400, 'invalid_request_error');
      await waitUntil('every child is gone', () => children() === 0);
    },
  );
});
