/**
 * flite writes each sentence's WAV to a temporary folder. That folder must not outlive a runner
 * killed mid-sentence (a cancelled request, a crash, a shutdown that cancels the request): the
 * runner cannot clean up after itself then, so the server owns the folder (src/engines/runner-temp.ts).
 * Each test points TMPDIR at a folder of its own and looks for what is left in it.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { runnerProcessIds } from '../../../src/engines/engine-worker.js';
import { VoxdProcess } from '../../helpers/cli.js';
import { post, waitUntil, withServer } from '../../helpers/voxd.js';

/** One sentence of 1,500 words: flite takes seconds over it, long enough to be cut in the middle. */
const LONG_SENTENCE = `${Array.from({ length: 1500 }, (_, i) => `word${i % 10}`).join(' ')}.`;

/** Every entry under `dir` whose name starts with `prefix`, at any depth. */
function found(dir: string, prefix: string): string[] {
  return (readdirSync(dir, { recursive: true }) as string[]).filter((p) =>
    p.split('/').some((name) => name.startsWith(prefix)),
  );
}

/** What voxd's runners left in `dir`: flite's folders and the runners' own. */
const leftovers = (dir: string) => [...found(dir, 'voxd-flite-'), ...found(dir, 'voxd-runner-')];

/** Runs `body` with TMPDIR (which runner processes inherit when forked) set to a new folder. */
async function withTmpdir(body: (dir: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'voxd-tmpdir-'));
  const saved = process.env['TMPDIR'];
  process.env['TMPDIR'] = dir;
  try {
    await body(dir);
  } finally {
    if (saved === undefined) delete process.env['TMPDIR'];
    else process.env['TMPDIR'] = saved;
    rmSync(dir, { recursive: true, force: true });
  }
}

const FLITE = { id: 'flite', family: 'flite_tts', task: 'tts', lazy: true };

for (const how of ['the client leaves', 'the runner is killed'] as const) {
  test(`a flite request cut mid-sentence (${how}) leaves no temporary folder`, async () => {
    await withTmpdir(async (dir) => {
      await withServer({ models: [FLITE] }, async (s) => {
        const controller = new AbortController();
        const speaking = post(
          s.url,
          '/v1/audio/speech',
          { model: 'flite', input: LONG_SENTENCE },
          controller.signal,
        ).catch((err: unknown) => err);
        // The gate: flite's folder exists, so the runner is inside the sentence.
        await waitUntil('flite is writing its WAV', () => found(dir, 'voxd-flite-').length > 0, 20_000);
        const [pid] = runnerProcessIds();
        assert.ok(pid !== undefined, 'a runner process serves flite');
        if (how === 'the client leaves') controller.abort();
        else process.kill(pid, 'SIGKILL');
        await speaking;
        await waitUntil('the runner has exited', () => !runnerProcessIds().includes(pid), 10_000);
        await waitUntil(
          'nothing of the runner is left in TMPDIR',
          () => leftovers(dir).length === 0,
          5000,
        ).catch(() => assert.deepEqual(leftovers(dir), [], 'left in TMPDIR'));
        // The model serves on, with a fresh runner.
        const res = await post(s.url, '/v1/audio/speech', { model: 'flite', input: 'Still here.' });
        assert.equal(res.status, 200, res.body.toString());
      });
      assert.deepEqual(leftovers(dir), [], 'left in TMPDIR once the server closed');
    });
  });
}

test('a server stopped by SIGTERM while flite speaks leaves no temporary folder', async () => {
  await withTmpdir(async (dir) => {
    // No time to finish: the shutdown cancels the request and kills its runner mid-sentence.
    const voxd = new VoxdProcess(['serve', '--port', '0', '--shutdown-timeout-ms', '1'], {
      env: { ...process.env, TMPDIR: dir },
    });
    try {
      const { url } = await voxd.listening();
      const speaking = post(url, '/v1/audio/speech', { model: 'flite', input: LONG_SENTENCE }).catch(
        (err: unknown) => err,
      );
      await waitUntil('flite is writing its WAV', () => found(dir, 'voxd-flite-').length > 0, 20_000);
      voxd.child.kill('SIGTERM');
      await voxd.exit();
      await speaking;
      assert.deepEqual(leftovers(dir), [], 'left in TMPDIR');
    } finally {
      await voxd.stop().catch(() => {});
    }
  });
});
