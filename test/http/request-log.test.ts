import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fixtureModel, post, startServer } from '../helpers/voxd.js';

test('--log logs one line per request; log_request_body adds JSON bodies', async () => {
  const s = await startServer(
    { log_request_body: true, models: [fixtureModel('m')] },
    { overrides: { log: true } },
  );
  try {
    assert.equal((await post(s.url, '/v1/tasks/run', { model: 'm', text: 'hello-body' })).status, 200);
    assert.equal((await post(s.url, '/v1/tasks/run', { model: 'nope' })).status, 404);
    const logs = s.logs.join('\n');
    assert.match(logs, /POST \/v1\/tasks\/run body: \{"model":"m","text":"hello-body"\}/);
    assert.match(logs, /POST \/v1\/tasks\/run 200 [\d.]+ ms/);
    assert.match(logs, /POST \/v1\/tasks\/run 404 [\d.]+ ms/);
  } finally {
    await s.close();
  }
});

test('without --log nothing is logged per request', async () => {
  const s = await startServer({ log_request_body: true, models: [fixtureModel('m')] });
  try {
    await post(s.url, '/v1/tasks/run', { model: 'm', text: 'quiet' });
    assert.doesNotMatch(s.logs.join('\n'), /quiet|POST/);
  } finally {
    await s.close();
  }
});
