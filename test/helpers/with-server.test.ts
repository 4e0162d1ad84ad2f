import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { closeAfter, fixtureModel, get, type TestServer, withServer } from './voxd.js';

const config = { models: [fixtureModel('m')] };

/** Whether the server still takes connections. */
async function answers(url: string): Promise<boolean> {
  return get(url, '/health').then(
    () => true,
    () => false,
  );
}

/** Makes the server's close fail after it has really closed, so no server outlives the test. */
function failingClose(s: TestServer): void {
  const close = s.close;
  s.close = async () => {
    await close();
    throw new Error('close failed');
  };
}

describe('withServer', () => {
  test('returns what the body returns and closes the server after it', async () => {
    let url = '';
    const result = await withServer(config, async (s) => {
      url = s.url;
      assert.equal(await answers(s.url), true);
      return 42;
    });
    assert.equal(result, 42);
    assert.equal(await answers(url), false);
  });

  test('closes the server when the body throws, and throws the body error', async () => {
    let url = '';
    await assert.rejects(
      withServer(config, async (s) => {
        url = s.url;
        throw new Error('body failed');
      }),
      /body failed/,
    );
    assert.equal(await answers(url), false);
  });

  test("the body's error wins over a close that fails after it", async () => {
    await assert.rejects(
      withServer(config, async (s) => {
        failingClose(s);
        throw new Error('body failed');
      }),
      /body failed/,
    );
  });

  test('a close that fails after a passing body is the error', async () => {
    await assert.rejects(
      withServer(config, async (s) => failingClose(s)),
      /close failed/,
    );
  });

  test('beforeClose runs in order while the server still answers, also after a failed body', async () => {
    const calls: string[] = [];
    let url = '';
    const note = (name: string) => async () => calls.push(`${name}: ${await answers(url)}`);
    await assert.rejects(
      withServer(config, { beforeClose: [note('first'), note('second')] }, async (s) => {
        url = s.url;
        throw new Error('body failed');
      }),
      /body failed/,
    );
    assert.deepEqual(calls, ['first: true', 'second: true']);
    assert.equal(await answers(url), false);
  });

  test('a failing beforeClose still closes the server', async () => {
    let url = '';
    await assert.rejects(
      withServer(
        config,
        {
          beforeClose: [
            () => {
              throw new Error('release failed');
            },
          ],
        },
        async (s) => {
          url = s.url;
        },
      ),
      /release failed/,
    );
    assert.equal(await answers(url), false);
  });
});

describe('closeAfter', () => {
  test("closes any closable, and the body's error wins over the close's", async () => {
    const closed: string[] = [];
    const closable = (name: string) => ({
      close: async () => {
        closed.push(name);
        throw new Error(`${name} close failed`);
      },
    });
    await assert.rejects(
      closeAfter(Promise.resolve(closable('a')), async () => {
        throw new Error('body failed');
      }),
      /body failed/,
    );
    await assert.rejects(
      closeAfter(Promise.resolve(closable('b')), async () => 1),
      /b close failed/,
    );
    assert.deepEqual(closed, ['a', 'b']);
  });
});
