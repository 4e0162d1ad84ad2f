/**
 * Compressed audio held in memory (base64, a small upload) is written to a temporary file for
 * ffmpeg; a full temporary folder there is the server's condition, a 507, not a 400 or a 500, and
 * nothing is left in the folder. The folder is a 1 MiB tmpfs, filled to the brim (mounting one needs
 * root: without it the test is skipped, saying so).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { mountTmpfs } from '../helpers/tmpfs.js';
import { errorOf, fixtureModel, post, reportOf, request, tempDir, withServer } from '../helpers/voxd.js';

/** Fills `dir`'s file system until it refuses another byte. */
function fill(path: string): void {
  const fd = openSync(path, 'w');
  const block = Buffer.alloc(4096, 1);
  try {
    for (;;) writeSync(fd, block);
  } catch (err) {
    assert.equal((err as NodeJS.ErrnoException).code, 'ENOSPC');
  } finally {
    closeSync(fd);
  }
}

const tmpfs = mountTmpfs(1024 * 1024);

test('base64 and in-memory uploads of compressed audio with a full temporary folder: 507, nothing left', {
  skip: typeof tmpfs === 'string' ? tmpfs : false,
}, async () => {
  const { dir, unmount } = tmpfs as Exclude<typeof tmpfs, string>;
  const work = tempDir('voxd-ffmpeg-full-');
  try {
    const mp3Path = join(work, 'a.mp3');
    execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', 'sine=d=3', mp3Path]);
    const mp3 = readFileSync(mp3Path);
    await withServer({ models: [fixtureModel('asr')] }, async (s) => {
      const saved = process.env['TMPDIR'];
      // The server writes to os.tmpdir(), which reads TMPDIR each time.
      process.env['TMPDIR'] = dir;
      const filler = join(dir, 'filler');
      try {
        fill(filler);
        const base64 = await post(s.url, '/v1/tasks/run', {
          model: 'asr',
          audio_base64: mp3.toString('base64'),
        });
        const message = errorOf(base64, 507, 'server_error');
        assert.equal(base64.json.error.code, 'insufficient_storage');
        assert.match(
          message,
          /^audio_base64: the audio could not be stored for ffmpeg: the server's temporary folder is full/,
        );
        const form = new FormData();
        form.set('model', 'asr');
        form.set('file', new Blob([mp3]), 'a.mp3');
        const upload = await request(s.url, 'POST', '/v1/audio/transcriptions', { body: form });
        assert.match(errorOf(upload, 507, 'server_error'), /^file: the audio could not be stored for ffmpeg/);
        assert.deepEqual(readdirSync(dir), ['filler'], 'no temporary folder is left');
        rmSync(filler);
        // With room again, the same audio is served.
        const again = await post(s.url, '/v1/tasks/run', {
          model: 'asr',
          audio_base64: mp3.toString('base64'),
        });
        assert.ok(reportOf(again).audio.samples > 40_000);
        assert.deepEqual(readdirSync(dir), []);
      } finally {
        if (saved === undefined) delete process.env['TMPDIR'];
        else process.env['TMPDIR'] = saved;
      }
    });
  } finally {
    unmount();
    rmSync(work, { recursive: true, force: true });
  }
});
