/**
 * hardExit ends a process whose libuv thread pool is blocked, where process.exit() hangs. Each case
 * runs a child node script that opens four FIFOs nobody writes to (fs.promises.readFile: one pool
 * thread each, all four taken) and then exits one way or the other. Children are stopped by pid.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { withDeadline } from '../helpers/voxd.js';

const HARD_EXIT = fileURLToPath(new URL('../../src/util/hard-exit.js', import.meta.url));
/** Long enough for a child that would exit to do so many times over; proves process.exit() is stuck. */
const STUCK_MS = 1500;
const DEADLINE_MS = 10_000;

let dir = '';
const children = new Set<ChildProcess>();

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'voxd-hard-exit-'));
});

after(async () => {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) process.kill(child.pid!, 'SIGKILL');
  }
  await Promise.all([...children].map((child) => exited(child)));
  // The FIFOs are in this folder: removing it unlinks them.
  rmSync(dir, { recursive: true, force: true });
});

/**
 * The child: makes four FIFOs in its own folder, starts a read of each (the reads are queued on the
 * pool before the exit call, so the pool's four threads take them first and block in open()), says
 * so on stderr, then runs `exitCall`.
 */
function childScript(name: string, exitCall: string): string {
  const script = join(dir, `${name}.mjs`);
  writeFileSync(
    script,
    `import { execFileSync } from 'node:child_process';
import { mkdirSync, writeSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { hardExit } from ${JSON.stringify(HARD_EXIT)};
const fifos = join(${JSON.stringify(dir)}, ${JSON.stringify(`${name}-fifos`)});
mkdirSync(fifos);
const paths = [0, 1, 2, 3].map((i) => join(fifos, 'fifo' + i));
execFileSync('mkfifo', paths);
for (const path of paths) readFile(path).catch(() => {});
writeSync(2, 'pool blocked\\n');
${exitCall};
`,
  );
  return script;
}

function exited(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null)
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

function run(script: string): { child: ChildProcess; stderr: () => string; blocked: Promise<void> } {
  const child = spawn(process.execPath, [script], { stdio: ['ignore', 'ignore', 'pipe'] });
  children.add(child);
  let stderr = '';
  child.stderr!.setEncoding('utf8');
  const blocked = new Promise<void>((resolve, reject) => {
    child.stderr!.on('data', (chunk: string) => {
      stderr += chunk;
      if (stderr.includes('pool blocked\n')) resolve();
    });
    child.once('exit', () =>
      reject(new Error(`the child exited before blocking its pool; stderr:\n${stderr}`)),
    );
  });
  blocked.catch(() => {});
  return { child, stderr: () => stderr, blocked };
}

test('hardExit ends a process whose thread pool is blocked, with its exit code and last words', async () => {
  for (const code of [0, 7]) {
    const script = childScript(`hard-${code}`, `hardExit(${code}, 'last words\\n')`);
    const { child, stderr, blocked } = run(script);
    await withDeadline(blocked, 'the child to block its pool', DEADLINE_MS);
    const exit = await withDeadline(exited(child), `the child to exit with ${code}`, DEADLINE_MS);
    assert.deepEqual(exit, { code, signal: null }, `stderr:\n${stderr()}`);
    assert.match(stderr(), /pool blocked\nlast words\n$/);
  }
});

test('control: process.exit() does not end the same process (the case hardExit exists for)', async () => {
  const { child, blocked } = run(childScript('plain', 'process.exit(0)'));
  await withDeadline(blocked, 'the child to block its pool', DEADLINE_MS);
  const early = await Promise.race([
    exited(child),
    new Promise<'stuck'>((resolve) => setTimeout(() => resolve('stuck'), STUCK_MS)),
  ]);
  assert.equal(early, 'stuck', 'process.exit() returned control to the OS despite the blocked pool');
  process.kill(child.pid!, 'SIGKILL');
  assert.deepEqual(await withDeadline(exited(child), 'the killed child', DEADLINE_MS), {
    code: null,
    signal: 'SIGKILL',
  });
});
