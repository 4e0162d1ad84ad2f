/**
 * Server-local paths (`audio`, `voice_ref`, batch items, path options) are read only as regular
 * files under the file roots. Every refusal is one 403 with one message, whatever the path is
 * (issue 10, defects 3, 4 and 7): devices are never read, FIFOs never block node's file-I/O pool,
 * and no message tells a client what a file holds or whether it exists.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join, relative } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { confinePath } from '../../src/util/server-files.js';
import {
  errorOf,
  fixtureModel,
  get,
  type HttpResult,
  post,
  reportOf,
  startServer,
  type TestServer,
  tempDir,
  withDeadline,
} from '../helpers/voxd.js';
import { smallWav } from '../http/wav-helpers.js';

/** The one refusal: 403 forbidden, the field, the roots, and nothing about the file. */
function forbidden(res: HttpResult, field: string, roots: string[]): string {
  const message = errorOf(res, 403, 'forbidden');
  assert.equal(
    message,
    `${field}: a server-local file must be a readable regular file under a file root; the file roots are ${roots.join(', ')}`,
  );
  return message;
}

describe('server-local paths are confined to the file roots', () => {
  let server: TestServer;
  let outside: string;
  let socket: Server;
  let roots: string[];
  const run = (request: Record<string, unknown>) =>
    post(server.url, '/v1/tasks/run', { model: 'asr', request });

  before(async () => {
    server = await startServer({
      models: [fixtureModel('asr'), fixtureModel('tts', { task: 'tts' })],
    });
    roots = [realpathSync(server.dir)];
    outside = tempDir('voxd-outside-');
    writeFileSync(join(outside, 'secret.wav'), smallWav(320));
    writeFileSync(join(server.dir, 'ok.wav'), smallWav(320));
    mkdirSync(join(server.dir, 'folder.wav'));
    symlinkSync(join(outside, 'secret.wav'), join(server.dir, 'escape.wav'));
    symlinkSync(join(server.dir, 'ok.wav'), join(server.dir, 'inside-link.wav'));
    symlinkSync('/etc/hostname', join(server.dir, 'etc-link.wav'));
    execFileSync('mkfifo', [join(server.dir, 'fifo.wav')]);
    socket = createServer();
    await new Promise<void>((resolve) => socket.listen(join(server.dir, 'socket.wav'), resolve));
  });
  after(async () => {
    await new Promise<void>((resolve) => socket.close(() => resolve()));
    await server?.close();
    rmSync(outside, { recursive: true, force: true });
  });

  test('a regular file under a root is read, directly, relatively or through a symlink that stays inside', async () => {
    for (const audio of ['ok.wav', join(server.dir, 'ok.wav'), 'inside-link.wav', './folder.wav/../ok.wav'])
      assert.equal(reportOf(await run({ audio })).audio.samples, 320, audio);
  });

  test('devices, FIFOs, sockets, folders, symlinks out, .., missing files and secrets: one 403, answered at once', async () => {
    const refused = [
      '/dev/zero',
      '/dev/urandom',
      '/dev/kmsg',
      'fifo.wav',
      'socket.wav',
      'folder.wav',
      'escape.wav',
      'etc-link.wav',
      relative(server.dir, join(outside, 'secret.wav')),
      '../../../../../../etc/passwd',
      join(outside, 'secret.wav'),
      'missing.wav',
      '/etc/shadow',
      '/proc/self/environ',
      '',
      'ok.wav\u0000.txt',
    ];
    const messages = new Set<string>();
    for (const audio of refused) {
      const res = await withDeadline(run({ audio }), `the answer for ${JSON.stringify(audio)}`, 2000);
      messages.add(forbidden(res, 'audio', roots));
    }
    assert.equal(messages.size, 1, 'every refusal reads the same');
  });

  test('every field that names a server file is confined: transcriptions, voice_ref, path options, batch items', async () => {
    forbidden(
      await post(server.url, '/v1/audio/transcriptions', { model: 'asr', audio: '/dev/zero' }),
      'audio',
      roots,
    );
    forbidden(
      await post(server.url, '/v1/audio/transcriptions', { model: 'asr', file: 'fifo.wav' }),
      'file',
      roots,
    );
    forbidden(
      await post(server.url, '/v1/audio/speech', { model: 'tts', input: 'hi', voice_ref: '/etc/shadow' }),
      'voice_ref',
      roots,
    );
    forbidden(
      await post(server.url, '/v1/audio/speech', {
        model: 'tts',
        input: 'hi',
        voice_ref: { type: 'path', path: 'escape.wav' },
      }),
      'voice_ref.path',
      roots,
    );
    forbidden(await run({ voice_ref: '/proc/self/environ' }), 'voice_ref', roots);
    forbidden(await run({ source_audio: '/dev/urandom' }), 'source_audio', roots);
    const batch = await post(server.url, '/v1/tasks/batch', {
      model: 'asr',
      requests: [{ audio: 'ok.wav' }, { audio: '/dev/zero' }],
    });
    forbidden(batch, 'audio', roots);
  });

  test('eight requests naming a FIFO at once, then a normal path request: all answered, none blocks the file-I/O pool', async () => {
    const fifos = await withDeadline(
      Promise.all(Array.from({ length: 8 }, () => run({ audio: 'fifo.wav' }))),
      'eight FIFO requests',
      5000,
    );
    for (const res of fifos) forbidden(res, 'audio', roots);
    assert.equal(
      reportOf(await withDeadline(run({ audio: 'ok.wav' }), 'a normal path request', 5000)).audio.samples,
      320,
    );
    assert.equal((await get(server.url, '/health')).status, 200);
  });
});

describe('file_roots set explicitly', () => {
  let server: TestServer;
  let extra: string;

  before(async () => {
    extra = tempDir('voxd-root-');
    writeFileSync(join(extra, 'in-root.wav'), smallWav(160));
    server = await startServer({ file_roots: [extra], models: [fixtureModel('asr')] });
    writeFileSync(join(server.dir, 'beside-config.wav'), smallWav(160));
  });
  after(async () => {
    await server?.close();
    rmSync(extra, { recursive: true, force: true });
  });

  test('only the listed roots: the config folder is no longer one', async () => {
    const run = (audio: string) => post(server.url, '/v1/tasks/run', { model: 'asr', audio });
    assert.equal(reportOf(await run(join(extra, 'in-root.wav'))).audio.samples, 160);
    forbidden(await run('beside-config.wav'), 'audio', [realpathSync(extra)]);
  });
});

test('without file roots nothing can be named (a server started without a config)', async () => {
  await assert.rejects(confinePath('/etc/hostname', 'audio', { baseDir: '/', roots: [] }), (err: Error) => {
    assert.equal(
      err.message,
      'audio: a server-local file must be a readable regular file under a file root; this server has no file roots (set file_roots or --file-roots)',
    );
    return true;
  });
  assert.equal(
    await confinePath('/etc/hostname', 'audio', { baseDir: '/', roots: ['/etc'] }),
    realpathSync('/etc/hostname'),
  );
  // A root is a folder, not a prefix: /etcetera is not under /etc.
  await assert.rejects(confinePath('/etc/hostname', 'audio', { baseDir: '/', roots: ['/et'] }));
});
