/**
 * A temporary folder that fills up while an upload is spooled to it is the server's condition: a
 * 507, not a 400 blaming the client's framing, and the spool file is removed. The folder is a 1 MiB
 * tmpfs (mounting one needs root: without it the test is skipped, saying so).
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { test } from 'node:test';
import { SPOOL_THRESHOLD } from '../../src/http/request/multipart.js';
import { mountTmpfs } from '../helpers/tmpfs.js';
import { errorOf, fixtureModel, transcribe, withServer } from '../helpers/voxd.js';
import { smallWav } from './wav-helpers.js';

const tmpfs = mountTmpfs(1024 * 1024);

test('an upload that fills the temporary folder is a 507, and its spool file is removed', {
  skip: typeof tmpfs === 'string' ? tmpfs : false,
}, async () => {
  const { dir, unmount } = tmpfs as Exclude<typeof tmpfs, string>;
  try {
    await withServer({ models: [fixtureModel('asr')] }, async (s) => {
      const saved = process.env['TMPDIR'];
      // The server spools to os.tmpdir(), which reads TMPDIR each time.
      process.env['TMPDIR'] = dir;
      try {
        // 4 MB: past the spool threshold, and four times the size of the folder.
        const wav = smallWav(2 * 1024 * 1024);
        assert.ok(wav.length > 2 * SPOOL_THRESHOLD);
        const res = await transcribe(s.url, 'asr', wav);
        const message = errorOf(res, 507, 'server_error');
        assert.equal(res.json.error.code, 'insufficient_storage');
        assert.match(message, /temporary folder is full \(ENOSPC\)/);
        assert.deepEqual(readdirSync(dir), [], 'the spool is removed');
      } finally {
        if (saved === undefined) delete process.env['TMPDIR'];
        else process.env['TMPDIR'] = saved;
      }
      // With room again, the same upload is served.
      assert.equal((await transcribe(s.url, 'asr', smallWav(2 * 1024 * 1024))).status, 200);
    });
  } finally {
    unmount();
  }
});
