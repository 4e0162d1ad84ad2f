/**
 * The startup rules of `voxd serve` as users meet them, through the real CLI: a bad keys-file line,
 * the refusal to serve keyless on a non-loopback host (and --insecure), the fixture engine off
 * unless enabled, and the one-shot commands' messages for a refused key.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { configFolder, VoxdProcess } from '../helpers/cli.js';
import { fixtureModel, get } from '../helpers/voxd.js';
import { WyomingClient } from '../helpers/wyoming.js';

const configs = configFolder('voxd-security-');
const SECRET = 'sk-live-3f9a0c1d7e5b';
/** The test helpers enable the fixture for every child; these tests take it away. */
const FIXTURE_OFF = { ...process.env, VOXD_ENABLE_FIXTURE: '' };

const serveConfig = (extra: Record<string, unknown> = {}) =>
  configs.write({ port: 0, ui: false, models: [fixtureModel('m')], ...extra });

describe('voxd serve: startup refusals', () => {
  test('a bad keys-file line stops startup with the file and line number, never the key', async () => {
    const keys = join(configs.dir, 'keys.txt');
    writeFileSync(keys, `# keys\nfine-key-0123456789 admin\n\n${SECRET} owner\n`);
    const voxd = new VoxdProcess(['serve', '--config', serveConfig(), '--api-keys-file', keys]);
    assert.deepEqual(await voxd.exit(), { code: 2, signal: null });
    assert.deepEqual(voxd.stderrLines, [
      `voxd: --api-keys-file ${keys} line 4: "owner" is not a scope; expected inference or admin`,
    ]);
    writeFileSync(keys, `${SECRET}\n`);
    const oneWord = new VoxdProcess(['serve', '--config', serveConfig(), '--api-keys-file', keys]);
    assert.equal((await oneWord.exit()).code, 2);
    assert.match(oneWord.stderr, /keys\.txt line 1: expected "KEY SCOPE" \(two words\), found 1/);
    assert.ok(!oneWord.stderr.includes(SECRET) && !voxd.stderr.includes(SECRET));
  });

  test('without keys, a non-loopback host is one line saying why and how; --insecure starts it', async () => {
    const refused = new VoxdProcess(['serve', '--config', serveConfig(), '--host', '0.0.0.0']);
    assert.deepEqual(await refused.exit(), { code: 2, signal: null });
    assert.deepEqual(refused.stderrLines, [
      'voxd: host: 0.0.0.0 is reachable from other machines and no API key is set; set api_keys, --api-keys-file or VOXD_API_KEYS, or pass --insecure to serve without keys',
    ]);
    const insecure = new VoxdProcess(['serve', '--config', serveConfig(), '--host', '0.0.0.0', '--insecure']);
    try {
      const [, port] = await insecure.waitForStderr(
        /voxd listening on http:\/\/0\.0\.0\.0:(\d+)\n/,
        'listening',
      );
      assert.equal((await get(`http://127.0.0.1:${port}`, '/health')).status, 200);
    } finally {
      assert.equal((await insecure.stop()).code, 0);
    }
  });

  test('Wyoming has no authentication: a non-loopback --wyoming-host is refused even with keys, and --insecure starts it', async () => {
    const refused = new VoxdProcess(
      ['serve', '--config', serveConfig(), '--wyoming-port', '0', '--wyoming-host', '0.0.0.0'],
      {
        env: { ...process.env, VOXD_API_KEYS: `${SECRET}:inference` },
      },
    );
    assert.deepEqual(await refused.exit(), { code: 2, signal: null });
    assert.deepEqual(refused.stderrLines, [
      'voxd: wyoming_host: 0.0.0.0 is reachable from other machines and Wyoming has no authentication; listen on loopback, or pass --insecure to serve Wyoming to the network',
    ]);
    const insecure = new VoxdProcess([
      'serve',
      '--config',
      serveConfig(),
      '--wyoming-port',
      '0',
      '--wyoming-host',
      '0.0.0.0',
      '--insecure',
    ]);
    try {
      const [, port] = await insecure.waitForStderr(
        /voxd wyoming on tcp:\/\/0\.0\.0\.0:(\d+)\n/,
        'the Wyoming listener',
      );
      const c = await WyomingClient.open(Number(port));
      c.send('describe');
      await c.next('info');
      await c.close();
    } finally {
      assert.equal((await insecure.stop()).code, 0);
    }
  });

  test('keys from VOXD_API_KEYS let it serve on 0.0.0.0, and a keyless request is refused', async () => {
    const voxd = new VoxdProcess(['serve', '--config', serveConfig(), '--host', '0.0.0.0'], {
      env: { ...process.env, VOXD_API_KEYS: `${SECRET}:inference` },
    });
    try {
      const [, port] = await voxd.waitForStderr(/voxd listening on http:\/\/0\.0\.0\.0:(\d+)\n/, 'listening');
      const url = `http://127.0.0.1:${port}`;
      assert.equal((await get(url, '/v1/models')).status, 401);
      assert.equal((await get(url, '/v1/models', { authorization: `Bearer ${SECRET}` })).status, 200);
    } finally {
      assert.equal((await voxd.stop()).code, 0);
    }
  });

  test('a config serving the fixture stops startup unless --enable-fixture or VOXD_ENABLE_FIXTURE=1', async () => {
    const config = serveConfig();
    const refused = new VoxdProcess(['serve', '--config', config], { env: FIXTURE_OFF });
    assert.deepEqual(await refused.exit(), { code: 2, signal: null });
    assert.deepEqual(refused.stderrLines, [
      'voxd: models[0].family: "fixture" is the test engine and is off; start voxd with --enable-fixture (or VOXD_ENABLE_FIXTURE=1) to serve it',
    ]);
    for (const [args, env] of [
      [['--enable-fixture'], FIXTURE_OFF],
      [[], { ...process.env, VOXD_ENABLE_FIXTURE: '1' }],
    ] as const) {
      const voxd = new VoxdProcess(['serve', '--config', config, ...args], { env });
      try {
        await voxd.listening();
      } finally {
        assert.equal((await voxd.stop()).code, 0);
      }
    }
  });
});

describe('one-shot commands against a keyed server', () => {
  test('no key and an inference key: a clear message; the right key works', async () => {
    const config = serveConfig({
      models: [fixtureModel('speaker', { task: 'tts' })],
      api_keys: [{ key: SECRET, scope: 'inference' }],
    });
    const server = new VoxdProcess(['serve', '--config', config]);
    try {
      const { url } = await server.listening();
      const out = join(configs.dir, 'out.wav');
      const noKey = new VoxdProcess(['speak', 'hi', '--url', url, '-m', 'speaker', '-o', out], {
        env: { ...process.env, VOXD_API_KEY: '' },
      });
      assert.equal((await noKey.exit()).code, 1);
      assert.match(
        noKey.stderr,
        /server answered 401: \/v1\/audio\/speech needs an API key; send "Authorization: Bearer <key>" \(pass the server's key with --api-key or \$VOXD_API_KEY\)/,
      );
      const wrong = new VoxdProcess([
        'speak',
        'hi',
        '--url',
        url,
        '-m',
        'speaker',
        '-o',
        out,
        '--api-key',
        'nope',
      ]);
      assert.equal((await wrong.exit()).code, 1);
      assert.match(wrong.stderr, /server answered 401: the API key is not valid/);
      const right = new VoxdProcess(['speak', 'hi', '--url', url, '-m', 'speaker', '-o', out], {
        env: { ...process.env, VOXD_API_KEY: SECRET },
      });
      assert.equal((await right.exit()).code, 0, right.stderr);
      assert.ok(!right.stderr.includes(SECRET) && !wrong.stderr.includes(SECRET));
    } finally {
      assert.equal((await server.stop()).code, 0);
    }
    assert.ok(!server.stderr.includes(SECRET));
  });
});
