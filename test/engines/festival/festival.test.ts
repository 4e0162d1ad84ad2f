/**
 * festival_tts: Debian's Festival with the cmu_us_slt_arctic_hts voice, one child process per
 * session. It speaks 32 kHz mono as text2wave does, the OpenAI names speak slt, speed is hts_engine's
 * rate, a cancelled request kills its Festival process, and text is only ever spoken: Scheme in the
 * input runs nothing.
 */

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { floats } from '../../../src/audio/pcm16-audio.js';
import { durationMs } from '../../../src/audio/types.js';
import { decodeWav } from '../../../src/audio/wav-decode.js';
import { FESTIVAL_ALIASES } from '../../../src/engines/festival/festival-family.js';
import { festivalProcessIds, speakCommand } from '../../../src/engines/festival/festival-process.js';
import { lazyModel } from '../../helpers/models.js';
import { engineSuiteServer } from '../../helpers/suite-server.js';
import { badRequest, get, post, tempDir, waitUntil, whenRuntime } from '../../helpers/voxd.js';

const SENTENCE = 'Please bring the blue umbrella when you leave the house.';

function audioOf(res: { status: number; body: Buffer }) {
  assert.equal(res.status, 200, res.body.toString('utf8'));
  return decodeWav(res.body);
}

/** Whether process `pid` still exists. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

test('the command sent to Festival holds only our paths, quoted, and the rate', () => {
  assert.equal(speakCommand('/t/in.txt', '/t/out.wav', 1), '(voxd_run "/t/in.txt" "/t/out.wav" nil)\n');
  assert.equal(speakCommand('/t/in.txt', '/t/o.wav', 1.5), '(voxd_run "/t/in.txt" "/t/o.wav" 1.5)\n');
  assert.equal(speakCommand('/a"b\\c', '/o', 1), '(voxd_run "/a\\"b\\\\c" "/o" nil)\n');
});

describe('festival_tts', () => {
  const s = engineSuiteServer([lazyModel('festival', 'festival_tts', 'tts')]);
  const speak = (body: Record<string, unknown>, signal?: AbortSignal) =>
    post(s.url, '/v1/audio/speech', { model: 'festival', ...body }, signal);

  const dirs: string[] = [];
  const scratch = (prefix: string) => {
    dirs.push(tempDir(prefix));
    return dirs.at(-1)!;
  };
  after(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  test('speaks 32 kHz mono, the same bytes every time, exactly as text2wave does', async () => {
    const first = await speak({ input: SENTENCE });
    const audio = audioOf(first);
    assert.deepEqual([audio.sampleRate, audio.channels], [32000, 1]);
    assert.ok(durationMs(audio) > 2000 && durationMs(audio) < 5000, `duration ${durationMs(audio)} ms`);
    assert.deepEqual((await speak({ input: SENTENCE })).body, first.body, 'same input, same bytes');
    // Festival's own command line, run directly, makes the same samples.
    const dir = scratch('voxd-festival-test-');
    const out = join(dir, 'direct.wav');
    const direct = spawnSync('text2wave', ['-o', out], { input: `${SENTENCE}\n` });
    assert.equal(direct.status, 0, direct.stderr.toString());
    assert.deepEqual(floats(decodeWav(readFileSync(out))), floats(audio));
  });

  test('slt is the voice; every OpenAI name speaks it; other names are a 400 naming slt', async () => {
    const slt = (await speak({ input: 'Hello there.', voice: 'slt' })).body;
    assert.deepEqual((await speak({ input: 'Hello there.' })).body, slt);
    for (const name of ['alloy', 'nova', 'onyx']) {
      assert.deepEqual((await speak({ input: 'Hello there.', voice: name })).body, slt, name);
    }
    assert.deepEqual((await get(s.url, '/v1/audio/voices?model=festival')).json.aliases, FESTIVAL_ALIASES);
    badRequest(await speak({ input: 'x', voice: 'kal' }), 'voice: "kal"', 'slt', 'alloy');
    badRequest(await speak({ input: 'x', voice: '") (quit) ("' }), 'voice:', 'slt');
  });

  test('speed changes the length of the speech; a bad speed is a 400', async () => {
    const input = 'One two three four five six seven eight nine ten.';
    const normal = durationMs(audioOf(await speak({ input })));
    const fast = durationMs(audioOf(await speak({ input, speed: 2 })));
    const slow = durationMs(audioOf(await speak({ input, speed: 0.5 })));
    assert.ok(fast < normal * 0.6, `${fast} ms at speed 2 vs ${normal} ms`);
    assert.ok(slow > normal * 1.6, `${slow} ms at speed 0.5 vs ${normal} ms`);
    badRequest(await speak({ input, speed: 10 }), 'speed', '"10"');
  });

  test('text in a script Festival cannot read is a 400, not silence', async () => {
    badRequest(await speak({ input: '東京タワー' }), 'input', 'festival found nothing');
    assert.ok(durationMs(audioOf(await speak({ input: 'Café, naïve, 東京 and 42.' }))) > 1000);
  });

  test('Scheme code in the input is spoken as text and runs nothing', async () => {
    const dir = scratch('voxd-festival-inject-');
    const marker = (n: number) => join(dir, `ran-${n}`);
    const attacks = [
      `") (system "touch ${marker(1)}") ("`,
      `(system "touch ${marker(2)}")`,
      `"))) (begin (system "touch ${marker(3)}") (quit)) ;`,
      `(voxd_run "/etc/passwd" "${marker(4)}" nil)`,
      `\\") (system \\"touch ${marker(5)}\\") (\\"`,
    ];
    for (const input of attacks) {
      const audio = audioOf(await speak({ input }));
      // Spoken, and at length: the words of the code are read out.
      assert.ok(durationMs(audio) > 1500, `${input}: ${durationMs(audio)} ms`);
    }
    for (let n = 1; n <= attacks.length; n++) assert.equal(existsSync(marker(n)), false, `attack ${n} ran`);
    // The same process still speaks normally (no (quit) reached it).
    audioOf(await speak({ input: 'Still here.' }));
  });

  test('a client that leaves mid-synthesis kills its Festival process at once; the model keeps serving', async () => {
    const long = Array.from({ length: 300 }, (_, i) => `Sentence ${i} goes on for a while.`).join(' ');
    const controller = new AbortController();
    const leaving = speak({ input: long }, controller.signal).catch((err: unknown) => err);
    const entry = s.voxd.runtime.get('festival');
    await whenRuntime(
      s.voxd.runtime,
      'the request is running',
      () => entry.scheduler.snapshot().activeRequests > 0,
      10_000,
    );
    // Its Festival process is up (a fresh one, or the session's from before).
    await waitUntil('festival is running', () => festivalProcessIds().length > 0, 10_000);
    const pids = festivalProcessIds();
    controller.abort();
    await leaving;
    await waitUntil('its festival process is gone', () => pids.every((pid) => !alive(pid)), 2000);
    await whenRuntime(
      s.voxd.runtime,
      'the slot is free',
      () => entry.scheduler.snapshot().activeRequests === 0,
      5000,
    );
    assert.deepEqual(
      festivalProcessIds().filter((pid) => pids.includes(pid)),
      [],
      'the session forgot the killed process',
    );
    assert.equal(audioOf(await speak({ input: 'Still here.' })).sampleRate, 32000);
  });

  test('a Festival process that dies mid-request is a clear 500; the next request starts a fresh one', async () => {
    const long = Array.from({ length: 300 }, (_, i) => `Sentence ${i} goes on for a while.`).join(' ');
    const pending = speak({ input: long });
    // The request's process: a fresh one, or the one its session already had.
    await whenRuntime(
      s.voxd.runtime,
      'festival is speaking',
      () => s.voxd.runtime.get('festival').scheduler.snapshot().activeRequests > 0,
      10_000,
    );
    await waitUntil('festival is running', () => festivalProcessIds().length > 0, 10_000);
    const pids = festivalProcessIds();
    for (const pid of pids) process.kill(pid, 'SIGKILL');
    const res = await pending;
    assert.equal(res.status, 500, res.body.toString('utf8'));
    assert.match(res.body.toString('utf8'), /festival exited on signal SIGKILL/);
    assert.equal(audioOf(await speak({ input: 'Still here.' })).sampleRate, 32000);
    assert.ok(festivalProcessIds().every((pid) => !pids.includes(pid)));
  });
});
