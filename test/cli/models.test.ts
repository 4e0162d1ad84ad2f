/**
 * `voxd models list|info|pull|rm` run as child processes, as users run them. The catalogue is the
 * project's own (catalog.json): VOXD_GITHUB_BASE_URL points at a local file server that serves a
 * fake NeMo CTC folder packed under the archive name of the catalogue's nemo-ctc package, so a
 * pull installs a model that really loads and transcribes ("hello world" for loud audio).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { encodeWav } from '../../src/audio/wav-encode.js';
import { findPackage } from '../../src/models/catalog.js';
import { deferred } from '../../src/util/wait.js';
import { type Exit, VoxdProcess } from '../helpers/cli.js';
import { waitUntil } from '../helpers/voxd.js';
import { tarOf } from '../models/archives.js';
import { type FileServer, startFileServer } from '../models/file-server.js';

const ID = 'nemo-ctc-en-citrinet-512';
/** A command that loads an engine from cold: generous, but a hang still fails the test. */
const LOAD_DEADLINE_MS = 60_000;

let server: FileServer;
let work: string;
let nemo: Buffer;
let unknown: Buffer;
let loudWav: string;
let roots = 0;

/** The catalogue archive's path on the test server (under the github source's base). */
const archivePath = () => `/gh/${findPackage(ID)!.archive!.url}`;

before(async () => {
  server = await startFileServer();
  work = mkdtempSync(join(tmpdir(), 'voxd-models-cli-'));
  nemo = tarOf('fake-nemo-ctc', join(work, 'nemo.tar.bz2'), 'bz2');
  // A canary folder without the files its family needs: no family recognises it.
  unknown = tarOf('fake-canary-fp32', join(work, 'unknown.tar.gz'), 'gz');
  loudWav = join(work, 'loud.wav');
  const samples = Float32Array.from({ length: 16000 }, (_, i) => 0.3 * Math.sin(i / 7));
  writeFileSync(loudWav, encodeWav({ samples, sampleRate: 16000, channels: 1 }));
});

after(async () => {
  await server.close();
  rmSync(work, { recursive: true, force: true });
});

const newRoot = () => join(work, `root-${++roots}`);

interface Run extends Exit {
  stdout: string;
  stderr: string;
}

function start(args: string[], env: NodeJS.ProcessEnv = {}): VoxdProcess {
  return new VoxdProcess(args, {
    env: {
      ...process.env,
      VOXD_GITHUB_BASE_URL: `${server.base}/gh`,
      VOXD_HF_BASE_URL: `${server.base}/hf`,
      ...env,
    },
  });
}

async function voxd(args: string[], ms?: number, env?: NodeJS.ProcessEnv): Promise<Run> {
  const child = start(args, env);
  const exit = await child.exit(ms);
  return { ...exit, stdout: child.stdout, stderr: child.stderr };
}

/** Exit 0 and nothing on stderr (stderr is a pipe here: no progress bar). */
function ok(run: Run, what: string): string {
  assert.equal(run.code, 0, `${what}: exit ${run.code}, stderr:\n${run.stderr}`);
  assert.equal(run.stderr, '', `${what}: stderr should be empty`);
  return run.stdout;
}

/** Exit `code`, nothing on stdout, one line `voxd: ...` on stderr; returns that line. */
function failed(run: Run, code: number, what: string): string {
  assert.equal(run.code, code, `${what}: exit ${run.code}, stderr:\n${run.stderr}`);
  assert.equal(run.stdout, '', `${what}: stdout should be empty`);
  assert.match(run.stderr, /^voxd: [^\n]+\n$/, `${what}: one line on stderr`);
  return run.stderr;
}

test('pull a catalogue package, list it, describe it, transcribe with it by id, remove it', async () => {
  server.routes.set(archivePath(), { body: nemo });
  const root = newRoot();
  const at = ['--models-root', root];

  const pulled = ok(await voxd(['models', 'pull', ID, ...at]), 'pull');
  assert.equal(pulled, `${join(root, ID)}\n`, 'stdout holds the installed folder and nothing else');
  assert.ok(statSync(join(root, ID)).isDirectory());

  const listed = ok(await voxd(['models', 'list', ...at]), 'list').split('\n');
  assert.match(listed[0]!, /^ID\s+FAMILY\s+TASK\s+SIZE\s+INSTALLED$/);
  assert.match(
    listed[1]!,
    new RegExp(`^${ID}\\s+nemo_ctc_asr\\s+asr\\s+[\\d.]+ k?B\\s+\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d`),
  );
  // The columns line up: the family starts at the same column on both lines.
  assert.equal(listed[0]!.indexOf('FAMILY'), listed[1]!.indexOf('nemo_ctc_asr'));
  const json = JSON.parse(ok(await voxd(['models', 'list', '--json', ...at]), 'list --json')) as {
    id: string;
    family: string;
    task: string;
    size_bytes: number;
    installed_at: string;
  }[];
  assert.deepEqual(
    json.map((p) => [p.id, p.family, p.task]),
    [[ID, 'nemo_ctc_asr', 'asr']],
  );
  assert.ok(json[0]!.size_bytes > 0 && !Number.isNaN(Date.parse(json[0]!.installed_at)));

  const described = ok(await voxd(['models', 'info', ID, ...at]), 'info');
  assert.match(described, /^family: nemo_ctc_asr$/m);
  assert.match(described, /^installed: true$/m);
  assert.match(described, /^licence: CC-BY-4.0$/m);
  assert.match(described, new RegExp(`^source_urls: ${server.base}/gh/asr-models/`, 'm'));
  const info = JSON.parse(ok(await voxd(['models', 'info', ID, '--json', ...at]), 'info --json')) as Record<
    string,
    unknown
  >;
  assert.deepEqual([info['id'], info['installed'], info['folder']], [ID, true, join(root, ID)]);

  // The one-shot command finds the package by its id, as a request to `voxd serve` does.
  const heard = ok(
    await voxd(['transcribe', loudWav, '-m', ID, ...at], LOAD_DEADLINE_MS),
    'transcribe -m <package id>',
  );
  assert.equal(heard, 'hello world\n');

  assert.equal(ok(await voxd(['models', 'rm', ID, ...at]), 'rm'), `removed ${ID}\n`);
  assert.equal(existsSync(join(root, ID)), false);
  assert.equal(ok(await voxd(['models', 'list', '--json', ...at]), 'list after rm'), '[]\n');
  assert.match(failed(await voxd(['models', 'rm', ID, ...at]), 1, 'rm again'), /is not installed/);
  // Not installed any more, but still in the catalogue.
  assert.match(ok(await voxd(['models', 'info', ID, ...at]), 'info after rm'), /^installed: false$/m);
});

// The test server is on loopback: the operator's own pull reaches it without a config
// (installer_allow_private_hosts guards URLs that clients send over the network).
test("a URL on the operator's own network is pulled; one whose folder no family recognises is refused: exit 1 naming the step, nothing left", async () => {
  server.routes.set('/any/mystery-model.tar.gz', { body: unknown });
  const root = newRoot();
  const line = failed(
    await voxd(['models', 'pull', `${server.base}/any/mystery-model.tar.gz`, '--models-root', root]),
    1,
    'pull of an unknown model',
  );
  assert.match(line, /^voxd: validate failed: no engine family recognises/);
  assert.equal(existsSync(join(root, 'mystery-model')), false);
  assert.equal(existsSync(join(root, '.partial', 'mystery-model')), false);
  assert.equal(ok(await voxd(['models', 'list', '--json', '--models-root', root]), 'list'), '[]\n');
});

test('a pull from a hub that cannot be reached says so in one plain line, with the mirror variable', async () => {
  const line = failed(
    await voxd(['models', 'pull', ID, '--models-root', newRoot()], undefined, {
      VOXD_GITHUB_BASE_URL: 'http://nohub.invalid/gh',
    }),
    1,
    'pull from an unreachable hub',
  );
  assert.equal(
    line,
    'voxd: download failed: could not reach nohub.invalid: its name does not resolve (is this machine offline?); the download goes through the mirror VOXD_GITHUB_BASE_URL names\n',
  );
});

test('Ctrl-C stops a pull with 130 and keeps the partial download; a second pull resumes it', async () => {
  const gate = deferred();
  const half = Math.floor(nemo.length / 2);
  server.routes.set(archivePath(), { body: nemo, stallAfter: half, gate: gate.promise });
  const root = newRoot();
  try {
    const sent = server.sent(archivePath());
    const child = start(['models', 'pull', ID, '--models-root', root]);
    await sent;
    // The bytes sent are on disk before the stop, so there is something to resume from.
    const downloads = join(root, '.partial', ID, 'downloads');
    await waitUntil('the partial download to reach the disk', () => {
      const names = existsSync(downloads) ? readdirSync(downloads) : [];
      return names.some((name) => statSync(join(downloads, name)).size >= half);
    });
    child.child.kill('SIGINT');
    const exit = await child.exit();
    assert.equal(exit.code, 130, `exit ${exit.code}, stderr:\n${child.stderr}`);
    assert.equal(child.stdout, '');
    assert.match(
      child.stderr,
      /^voxd: interrupted: the partial download of .* is kept .*run the same pull again to resume\n$/,
    );
    assert.equal(existsSync(join(root, ID)), false);
  } finally {
    gate.resolve();
  }

  server.routes.set(archivePath(), { body: nemo });
  const before = server.requests.length;
  assert.equal(
    ok(await voxd(['models', 'pull', ID, '--models-root', root]), 'second pull'),
    `${join(root, ID)}\n`,
  );
  const resumed = server.requests.slice(before).filter((r) => r.path === archivePath());
  assert.deepEqual(
    resumed.map((r) => r.range),
    [`bytes=${half}-`],
  );
});

test("the root: --models-root, else the config's models_root, else $VOXD_DATA_DIR/models", async () => {
  server.routes.set(archivePath(), { body: nemo });
  const data = join(work, 'data');
  const env = { VOXD_DATA_DIR: data };
  const pulled = ok(await voxd(['models', 'pull', ID], undefined, env), 'pull to the default root');
  assert.equal(pulled, `${join(data, 'models', ID)}\n`);
  const config = join(work, 'server.json');
  writeFileSync(config, JSON.stringify({ ui_management: true, models_root: join(data, 'models') }));
  const ids = async (args: string[]) =>
    (
      JSON.parse(
        ok(
          await voxd(['models', 'list', '--json', ...args], undefined, { VOXD_DATA_DIR: work }),
          args.join(' '),
        ),
      ) as { id: string }[]
    ).map((p) => p.id);
  assert.deepEqual(await ids(['--config', config]), [ID]);
  assert.deepEqual(await ids(['--config', config, '--models-root', newRoot()]), []);
  assert.deepEqual(await ids([]), []);
});

test('bad usage exits 2 with one line; an unknown package exits 1; --help exits 0', async () => {
  const root = newRoot();
  const at = ['--models-root', root];
  for (const args of [
    ['models'],
    ['models', 'nope'],
    ['models', 'list', '--nope'],
    ['models', 'list', 'extra', ...at],
    ['models', 'info', ...at],
    ['models', 'pull', ...at],
    ['models', 'pull', 'a', 'b', ...at],
    ['models', 'pull', ID, '--id', 'x', ...at],
    ['models', 'pull', 'https://example.invalid/m.tar.gz', '--id', ...at],
    ['models', 'pull', 'https://example.invalid/m.tar.gz', '--family', 'not_a_family', ...at],
    ['models', 'pull', 'bad id!', ...at],
    ['models', 'rm', ...at],
    ['models', 'list', '--config', join(work, 'missing.json')],
  ])
    failed(await voxd(args), 2, args.join(' '));
  assert.match(
    failed(await voxd(['models', 'info', 'nope', ...at]), 1, 'info nope'),
    /unknown package id: "nope"/,
  );
  assert.match(
    failed(await voxd(['models', 'pull', 'nope', ...at]), 1, 'pull nope'),
    /unknown package id: nope/,
  );
  for (const args of [
    ['models', '--help'],
    ['models', 'list', '--help'],
    ['models', 'info', '-h'],
    ['models', 'pull', '--help'],
    ['models', 'rm', '--help'],
  ])
    assert.match(ok(await voxd(args), args.join(' ')), /^Usage: voxd models/);
});

test('a models root in /proc is refused at once by every command (no hanging mkdir): exit 2 naming it', async () => {
  for (const root of ['/proc/nope', '/proc/nope/x', '/sys/nope']) {
    // A hanging mkdir would never let the child exit: it gets a deadline, and is stopped after it.
    const child = start(['models', 'list', '--models-root', root]);
    let exit: Exit;
    try {
      exit = await child.exit(10_000);
    } finally {
      await child.stop().catch(() => {});
    }
    const line = failed(
      { ...exit, stdout: child.stdout, stderr: child.stderr },
      2,
      `list --models-root ${root}`,
    );
    assert.match(
      line,
      new RegExp(`^voxd: models_root: .*${root}.* is inside /(proc|sys), a virtual file system`),
    );
  }
});
