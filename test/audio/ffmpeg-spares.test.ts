/**
 * EncoderSpares with real child processes (`cat`, which idles on its input as an ffmpeg encoder
 * does): a spare is started once a taken process exits, handed to the next take of the same
 * command line, bounded per line and in all, retired when idle or dead, and killed by close().
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'node:test';
import { EncoderSpares } from '../../src/audio/ffmpeg-spares.js';
import { waitUntil } from '../helpers/voxd.js';

/** Spares over `cat`, with every process it started (by command line) for the test to see. */
function catSpares(max: number, idleMs = 60_000) {
  const started: { args: string[]; child: ChildProcess }[] = [];
  const spares = new EncoderSpares(
    (args) => {
      const child = spawn('cat', [], { stdio: ['pipe', 'pipe', 'pipe'] });
      started.push({ args, child });
      return child;
    },
    max,
    idleMs,
  );
  return { spares, started };
}

/** Ends a taken process as an encoder ends: its input closed, it exits. */
async function finish(child: ChildProcess): Promise<void> {
  const closed = once(child, 'close');
  child.stdin!.end();
  await closed;
}

const alive = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;

test('a spare is started once the taken process exits, and the next take of that line gets it', async () => {
  const { spares, started } = catSpares(4);
  const first = spares.take(['mp3', '16000']);
  assert.equal(started.length, 1, 'no spare yet: a process of its own');
  assert.equal(spares.size, 0, 'none is started while the first one works');
  await finish(first);
  await waitUntil('a spare waits', () => spares.size === 1);
  const spare = started[1]!.child;
  assert.ok(alive(spare));
  const second = spares.take(['mp3', '16000']);
  assert.equal(second, spare, 'the spare is handed out');
  assert.equal(started.length, 2, 'nothing new was started for it');
  // Another line gets no spare of this one.
  const other = spares.take(['mp3', '24000']);
  assert.equal(started.length, 3);
  assert.notEqual(other, spare);
  spares.close();
  await Promise.all([finish(second), finish(other)]);
  assert.equal(spares.size, 0, 'none is started after close()');
  assert.equal(started.length, 3);
});

test('at most `max` spares: the least recently used line gives its spare up first', async () => {
  const { spares, started } = catSpares(2);
  for (const rate of ['8000', '16000', '24000']) {
    await finish(spares.take(['mp3', rate]));
    await waitUntil(`a spare for ${rate}`, () =>
      started.some((s) => s.args[1] === rate && started.indexOf(s) > 0 && alive(s.child)),
    );
  }
  assert.equal(spares.size, 2);
  const for8k = started.filter((s) => s.args[1] === '8000').at(-1)!.child;
  await waitUntil('the oldest spare is killed', () => !alive(for8k));
  spares.close();
  await waitUntil('every spare is killed', () => started.every((s) => !alive(s.child)));
});

test('a spare that dies while it waits is forgotten, and one unused for idleMs is retired', async () => {
  const { spares, started } = catSpares(4, 100);
  await finish(spares.take(['opus']));
  await waitUntil('a spare waits', () => spares.size === 1);
  started[1]!.child.kill('SIGKILL');
  await waitUntil('the dead spare is forgotten', () => spares.size === 0);
  const fresh = spares.take(['opus']);
  assert.notEqual(fresh, started[1]!.child, 'a dead spare is not handed out');
  await finish(fresh);
  await waitUntil('a new spare waits', () => spares.size === 1);
  const idle = started.at(-1)!.child;
  await waitUntil('the idle spare is retired', () => spares.size === 0 && !alive(idle));
  spares.close();
});
