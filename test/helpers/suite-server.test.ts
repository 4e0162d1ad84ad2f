import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { suiteServer } from './suite-server.js';
import { fixtureModel, get } from './voxd.js';

/** Whether a server still takes connections at `url`. */
async function answers(url: string): Promise<boolean> {
  return get(url, '/health').then(
    () => true,
    () => false,
  );
}

describe('suiteServer', () => {
  const order: string[] = [];
  let configured = '';
  before(() => {
    configured = 'm';
    order.push('earlier before');
  });
  const s = suiteServer(() => ({ models: [fixtureModel(configured)] }));
  let url = '';
  after(async () => {
    // Registered after suiteServer: runs once the server has closed.
    assert.equal(await answers(url), false, 'the server is closed before later after hooks');
  });

  test('the server is started by the block before hook, after the earlier ones', async () => {
    order.push('test');
    url = s.url;
    assert.deepEqual(order, ['earlier before', 'test']);
    assert.equal(await answers(s.url), true);
    const { json } = await get(s.url, '/v1/models');
    assert.deepEqual(
      json.data.map((m: { id: string }) => m.id),
      ['m'],
      'the config function ran after the earlier before hook',
    );
  });

  test('the same server serves every test of the block', () => {
    assert.equal(s.url, url);
    assert.ok(s.voxd.runtime);
  });
});

describe('suiteServer closed by a test', () => {
  const s = suiteServer({ models: [fixtureModel('m')] });

  test('a close in a test closes it once; the after hook waits for that close', async () => {
    const url = s.url;
    const first = s.close();
    assert.equal(s.close(), first, 'a second close is the same close');
    await first;
    assert.equal(await answers(url), false);
  });
});

describe('suiteServer with a scratch folder', () => {
  let scratch = '';
  const s = suiteServer(
    (dir) => {
      scratch = dir;
      writeFileSync(join(dir, 'made-before-the-start'), '');
      return { models: [fixtureModel('m')] };
    },
    { scratch: 'voxd-suite-scratch-' },
  );
  after(() => {
    assert.equal(existsSync(scratch), false, 'the scratch folder is gone after the close');
  });

  test('the config function gets a folder made before the start', async () => {
    assert.ok(scratch.includes('voxd-suite-scratch-'));
    assert.equal(existsSync(join(scratch, 'made-before-the-start')), true);
    assert.equal(await answers(s.url), true);
  });
});
