/**
 * The log's destination (src/observability/logger.ts): lines for a file or a non-terminal stderr
 * are written in batches, asynchronously, yet none is lost, neither a quiet server's last line nor
 * those logged right before an exit; and the child loggers of a model and of a request carry their
 * id on every line, as the fields docs/observability.md names.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs, { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createLogger, modelLogger, requestLogger } from '../../src/observability/logger.js';
import { configFolder, VoxdProcess } from '../helpers/cli.js';
import {
  fixtureModel,
  type LogRecord,
  post,
  request,
  runTask,
  tempDir,
  waitUntil,
  withServer,
} from '../helpers/voxd.js';

const execFileAsync = promisify(execFile);
const CHILD = fileURLToPath(new URL('./log-child.js', import.meta.url));
const configs = configFolder('voxd-logger-');

/** Counts the fs.write calls (sonic-boom's asynchronous writes) that carry `marker`, while `body` runs. */
async function countingWrites<T>(
  marker: string,
  body: () => Promise<T>,
): Promise<{ writes: number; result: T }> {
  const write = fs.write;
  let writes = 0;
  fs.write = ((fd: number, data: unknown, ...rest: unknown[]) => {
    if (String(data).includes(marker)) writes++;
    return (write as (...args: unknown[]) => unknown)(fd, data, ...rest);
  }) as typeof fs.write;
  try {
    return { result: await body(), writes };
  } finally {
    fs.write = write;
  }
}

const lines = (text: string) => text.split('\n').filter((line) => line.length > 0);

/** A log file in a folder of its own, removed after the test. */
function logFile(t: TestContext): string {
  const dir = tempDir('voxd-log-');
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'voxd.log');
}

test('a log file gets its lines in batches: 2000 lines in far fewer writes, every one of them, in order', async (t) => {
  const file = logFile(t);
  const output = createLogger({ level: 'info', file });
  const { writes } = await countingWrites('batched-line', async () => {
    for (let i = 0; i < 2000; i++) output.logger.info({ i }, 'batched-line');
    await output.drained();
  });
  const written = lines(readFileSync(file, 'utf8')).map((line) => JSON.parse(line) as { i: number });
  assert.deepEqual(
    written.map((r) => r.i),
    Array.from({ length: 2000 }, (_, i) => i),
  );
  // About 90 bytes a line: a batch of up to 16 KiB holds some 180 lines; one line a write would be 2000.
  assert.ok(writes > 0 && writes <= 40, `${writes} writes for 2000 lines`);
});

test("a quiet server's lone line is written at the end of its turn, without waiting for 4 KiB more", async (t) => {
  const file = logFile(t);
  const output = createLogger({ level: 'info', file });
  // Once the file is open (a line logged before it opens is written when it does).
  output.logger.info('first line');
  await output.drained();
  assert.ok(readFileSync(file, 'utf8').includes('first line'));
  output.logger.info('lone line');
  // No drained(), no flush(): only the turn's end may write it.
  await waitUntil(
    'the lone line is in the file',
    () => readFileSync(file, 'utf8').includes('lone line'),
    2000,
  );
});

/** Runs test/observability/log-child.ts: its stderr lines and how many writes reached its stderr. */
async function runChild(count: number, ending: 'flush' | 'drained' | 'none') {
  // Rejects on a non-zero exit: the child ends with hardExit(0).
  const { stdout, stderr } = await execFileAsync(process.execPath, [CHILD, String(count), ending]);
  const records = lines(stderr).map((line) => JSON.parse(line) as Record<string, unknown>);
  return { records, writes: (JSON.parse(stdout) as { writes: number }).writes };
}

for (const ending of ['flush', 'drained'] as const) {
  test(`stderr (a pipe) gets batched writes, and every line logged right before a hard exit (${ending})`, async () => {
    const { records, writes } = await runChild(4000, ending);
    assert.equal(records.length, 4001, `${records.length} of 4001 lines arrived`);
    assert.deepEqual(
      records.slice(0, -1).map((r) => r['n']),
      Array.from({ length: 4000 }, (_, n) => n),
    );
    assert.equal(records.at(-1)!['msg'], 'last line');
    assert.ok(writes > 0 && writes <= 80, `${writes} writes for 4001 lines`);
  });
}

test('without flush() or drained(), a hard exit loses the lines still buffered (what the exits guard against)', async () => {
  const { records } = await runChild(4000, 'none');
  assert.ok(records.length < 4001, 'every line arrived without a flush: this test no longer shows the loss');
});

test('voxd serve: the lines of its clean exit are all there, the last being "stopped"', async () => {
  const config = configs.write({ port: 0, ui: false, models: [fixtureModel('m')] });
  const voxd = new VoxdProcess(['serve', '--config', config, '--log']);
  let url: string;
  try {
    ({ url } = await voxd.listening());
    assert.equal((await post(url, '/v1/tasks/run', { model: 'm', text: 'x' })).status, 200);
    await voxd.waitForStderr(/"route":"\/v1\/tasks\/run"/, 'the request line');
  } finally {
    assert.deepEqual(await voxd.stop(), { code: 0, signal: null });
  }
  const records = voxd.stderrLines
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogRecord);
  const messages = records.map((r) => r.msg);
  // The shutdown's lines, written in its last moments, in order, up to the very last.
  const at = (msg: string) => messages.findIndex((m) => m.startsWith(msg));
  const order = ['started', 'POST /v1/tasks/run 200', 'SIGTERM: draining', 'shutting down', 'model unloaded'];
  assert.deepEqual(
    order.map(at),
    order.map(at).toSorted((x, y) => x - y),
    messages.join('\n'),
  );
  assert.ok(
    order.every((msg) => at(msg) >= 0),
    messages.join('\n'),
  );
  assert.equal(messages.at(-1), 'stopped');
  assert.equal(records.find((r) => r.msg === 'model unloaded')!['model'], 'm');
});

/** A logger whose JSON lines are kept as written. */
function capture() {
  const written: string[] = [];
  const { logger } = createLogger({ level: 'info', sink: { write: (line: string) => written.push(line) } });
  const timeless = () => written.map((line) => line.replace(/"time":"[^"]+",/, ''));
  return { logger, written, timeless };
}

test('a model child and a request child carry their id: the same lines as the fields given each time', () => {
  const { logger, timeless } = capture();
  modelLogger(logger, 'm').info({ slots: 1, load_ms: 3 }, 'model loaded');
  logger.info({ model: 'm', slots: 1, load_ms: 3 }, 'model loaded');
  requestLogger(logger, 'abc-1').info({ method: 'POST', status: 200 }, 'POST /x 200 1.0 ms');
  logger.info({ req_id: 'abc-1', method: 'POST', status: 200 }, 'POST /x 200 1.0 ms');
  const [child, fields, reqChild, reqFields] = timeless();
  assert.equal(child, fields);
  assert.equal(reqChild, reqFields);
  assert.equal(child, '{"level":"info","model":"m","slots":1,"load_ms":3,"msg":"model loaded"}\n');
});

test("a request's lines all carry its req_id, its body line too; a crashed model's lines carry the model", async () => {
  await withServer(
    { log_request_body: true, models: [fixtureModel('m'), fixtureModel('a', { isolation: 'session' })] },
    { overrides: { log: true }, parallel: true },
    async (s) => {
      const res = await request(s.url, 'POST', '/v1/tasks/run', {
        body: JSON.stringify({ model: 'm', text: 'logged-body' }),
        headers: { 'Content-Type': 'application/json' },
      });
      const id = res.headers.get('x-request-id')!;
      await waitUntil('the request line', () => s.records.some((r) => r.req_id === id && r.status === 200));
      const body = s.records.find((r) => r.msg.includes('logged-body'));
      assert.equal(body?.req_id, id, JSON.stringify(body));
      assert.equal((await runTask(s, 'a', { crash: 'true' })).status, 500);
      const crashed = (r: LogRecord) => r.msg.startsWith("model 'a': ") && r.msg.includes('unloading it');
      await waitUntil('the crash line', () => s.records.some(crashed));
      assert.equal(s.records.find(crashed)!['model'], 'a');
      assert.ok(
        s.records
          .filter((r) => r.msg === 'model loaded')
          .every((r) => r['model'] === 'm' || r['model'] === 'a'),
      );
    },
  );
});
