import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { EMBEDDED_MODELS } from '../../src/config/embedded-models.js';
import { MODEL_ID, type ModelContext, parseModelConfig } from '../../src/config/model-config.js';
import { TASK_TOKENS } from '../../src/config/types.js';
import { catalogPackages } from '../../src/models/catalog.js';
import { expectConfigError } from '../helpers/config.js';

const baseDir = mkdtempSync(path.join(tmpdir(), 'voxd-model-'));
after(() => rmSync(baseDir, { recursive: true, force: true }));
mkdirSync(path.join(baseDir, 'voices'));
writeFileSync(path.join(baseDir, 'voices', 'alice.wav'), 'RIFF');

const ctx = (over: Partial<ModelContext> = {}): ModelContext => ({
  key: 'models[0]',
  baseDir,
  lazyDefault: false,
  parallel: false,
  knownFamilies: ['fixture', 'kokoro'],
  ...over,
});
const base = { id: 'a', family: 'fixture', path: 'models/a' };
const parse = (extra: Record<string, unknown>, over: Partial<ModelContext> = {}) =>
  parseModelConfig({ ...base, ...extra }, ctx(over));

test('minimal model gets every default', () => {
  const { model, notices } = parseModelConfig(base, ctx());
  assert.deepEqual(model, {
    id: 'a',
    family: 'fixture',
    path: path.join(baseDir, 'models/a'),
    task: 'tts',
    mode: 'offline',
    lazy: false,
    load_options: {},
    session_options: {},
    default_request_options: {},
    voice_presets: {},
  });
  assert.deepEqual(notices, []);
});

test('lazy inherits lazyDefault, and an explicit lazy wins', () => {
  assert.equal(parse({}, { lazyDefault: true }).model.lazy, true);
  assert.equal(parse({ lazy: false }, { lazyDefault: true }).model.lazy, false);
  assert.equal(parse({ lazy: true }).model.lazy, true);
});

test('absolute paths are kept, relative ones resolve against baseDir', () => {
  const abs = path.join(tmpdir(), 'elsewhere', 'model.gguf');
  assert.equal(parse({ path: abs }).model.path, abs);
  assert.equal(parse({ path: '../up/m.gguf' }).model.path, path.resolve(baseDir, '../up/m.gguf'));
});

test('a model that is not an object is rejected', () => {
  for (const bad of [null, [], 'a', 3]) {
    expectConfigError(() => parseModelConfig(bad, ctx()), 'models[0]', bad);
  }
});

test('id and family are required, path optional; each a non-empty string when given', () => {
  const { path: _path, ...withoutPath } = base as Record<string, unknown>;
  assert.equal(
    parseModelConfig(withoutPath, ctx()).model.path,
    '',
    'no path: the engine finds its own model',
  );
  for (const name of ['id', 'family', 'path']) {
    const { [name]: _omit, ...rest } = base as Record<string, unknown>;
    if (name !== 'path')
      expectConfigError(() => parseModelConfig(rest, ctx()), `models[0].${name}`, undefined);
    expectConfigError(() => parse({ [name]: '' }), `models[0].${name}`, '', 'non-empty string');
    expectConfigError(() => parse({ [name]: 5 }), `models[0].${name}`, 5);
    expectConfigError(() => parse({ [name]: null }), `models[0].${name}`, null);
  }
});

test('unknown family lists the known families', () => {
  expectConfigError(() => parse({ family: 'nope' }), 'models[0].family', 'nope', 'fixture, kokoro');
  expectConfigError(
    () => parse({ family: 'kokoro' }, { knownFamilies: [] }),
    'models[0].family',
    'kokoro',
    'no engine families',
  );
  // A catalogue without the fixture (voxd serve without --enable-fixture) says how to turn it on.
  expectConfigError(
    () => parse({}, { knownFamilies: ['kokoro'] }),
    'models[0].family',
    'fixture',
    '--enable-fixture (or VOXD_ENABLE_FIXTURE=1)',
  );
  assert.equal(parse({ family: 'kokoro' }).model.family, 'kokoro');
});

test('task: every token is accepted; an unknown token lists them all', () => {
  for (const task of TASK_TOKENS) assert.equal(parse({ task }).model.task, task);
  const err = expectConfigError(() => parse({ task: 'speak' }), 'models[0].task', 'speak');
  for (const token of TASK_TOKENS) assert.ok(err.message.includes(token));
  expectConfigError(() => parse({ task: 1 }), 'models[0].task', 1);
  expectConfigError(() => parse({ task: 'TTS' }), 'models[0].task', 'TTS');
});

test('mode: offline or streaming', () => {
  assert.equal(parse({ mode: 'streaming' }).model.mode, 'streaming');
  assert.equal(parse({ mode: 'offline' }).model.mode, 'offline');
  expectConfigError(() => parse({ mode: 'batch' }), 'models[0].mode', 'batch', 'offline, streaming');
  expectConfigError(() => parse({ mode: true }), 'models[0].mode', true);
});

test('lazy must be a boolean', () => {
  expectConfigError(() => parse({ lazy: 'yes' }), 'models[0].lazy', 'yes');
  expectConfigError(() => parse({ lazy: 1 }), 'models[0].lazy', 1);
  expectConfigError(() => parse({ lazy: null }), 'models[0].lazy', null);
});

test('busy_timeout_ms: an integer >= 0', () => {
  assert.equal(parse({ busy_timeout_ms: 0 }).model.busy_timeout_ms, 0);
  assert.equal(parse({ busy_timeout_ms: 2500 }).model.busy_timeout_ms, 2500);
  for (const bad of [-5, 1.5, '10', null, true, 2 ** 53]) {
    expectConfigError(
      () => parse({ busy_timeout_ms: bad }),
      'models[0].busy_timeout_ms',
      bad,
      'integer >= 0',
    );
  }
});

test('live_ingest: any subset, same rules as the top level', () => {
  assert.deepEqual(parse({ live_ingest: {} }).model.live_ingest, {});
  assert.deepEqual(parse({ live_ingest: { idle_timeout_ms: 0, max_chunk_bytes: 1 } }).model.live_ingest, {
    idle_timeout_ms: 0,
    max_chunk_bytes: 1,
  });
  expectConfigError(() => parse({ live_ingest: 5 }), 'models[0].live_ingest', 5);
  expectConfigError(() => parse({ live_ingest: [] }), 'models[0].live_ingest', []);
  expectConfigError(() => parse({ live_ingest: { foo: 1 } }), 'models[0].live_ingest.foo', 'foo', 'unknown');
  expectConfigError(
    () => parse({ live_ingest: { max_chunk_bytes: 0 } }),
    'models[0].live_ingest.max_chunk_bytes',
    0,
    'integer >= 1',
  );
  for (const bad of [-1, '1', 1.5, null, 2 ** 53]) {
    expectConfigError(
      () => parse({ live_ingest: { total_timeout_ms: bad } }),
      'models[0].live_ingest.total_timeout_ms',
      bad,
    );
  }
});

test('config and weight are strings', () => {
  const { model } = parse({ config: 'q8', weight: 'base' });
  assert.equal(model.config, 'q8');
  assert.equal(model.weight, 'base');
  expectConfigError(() => parse({ config: 5 }), 'models[0].config', 5);
  expectConfigError(() => parse({ weight: false }), 'models[0].weight', false);
});

test('model_spec_override resolves against baseDir and yields a notice', () => {
  const { model, notices } = parse({ model_spec_override: 'specs' });
  assert.equal(model.model_spec_override, path.join(baseDir, 'specs'));
  assert.deepEqual(
    notices.map((n) => n.key),
    ['models[0].model_spec_override'],
  );
  expectConfigError(() => parse({ model_spec_override: 3 }), 'models[0].model_spec_override', 3);
});

test('option objects flatten to string maps', () => {
  const { model } = parse({
    load_options: { 'qwen3_tts.mem_saver': true, n: 4 },
    session_options: { language: 'en', x: null },
    default_request_options: { speed: 1.25, tags: ['a'] },
  });
  assert.deepEqual(model.load_options, { 'qwen3_tts.mem_saver': 'true', n: '4' });
  assert.deepEqual(model.session_options, { language: 'en' });
  assert.deepEqual(model.default_request_options, { speed: '1.25', tags: '["a"]' });
  for (const name of ['load_options', 'session_options', 'default_request_options']) {
    for (const bad of [[], 'x', null, 1]) {
      expectConfigError(() => parse({ [name]: bad }), `models[0].${name}`, bad);
    }
  }
});

test('voice_presets: fields are strings, voice_ref resolves and must exist', () => {
  const { model } = parse({
    voice_presets: {
      alice: { voice_ref: 'voices/alice.wav', reference_text: 'Hello.' },
      bob: { voice_id: 'bm_george' },
    },
  });
  assert.deepEqual(model.voice_presets, {
    alice: { voice_ref: path.join(baseDir, 'voices', 'alice.wav'), reference_text: 'Hello.' },
    bob: { voice_id: 'bm_george' },
  });
  expectConfigError(
    () => parse({ voice_presets: { carol: { voice_ref: 'voices/carol.wav' } } }),
    'models[0].voice_presets.carol.voice_ref',
    'voices/carol.wav',
    'no such file',
  );
  expectConfigError(
    () => parse({ voice_presets: { dir: { voice_ref: 'voices' } } }),
    'models[0].voice_presets.dir.voice_ref',
    'voices',
  );
  expectConfigError(
    () => parse({ voice_presets: { '': { voice_id: 'x' } } }),
    'models[0].voice_presets[""]',
    '',
  );
  expectConfigError(
    () => parse({ voice_presets: { empty: {} } }),
    'models[0].voice_presets.empty',
    {},
    'at least one',
  );
  expectConfigError(() => parse({ voice_presets: { s: 'x' } }), 'models[0].voice_presets.s', 'x');
  expectConfigError(() => parse({ voice_presets: [] }), 'models[0].voice_presets', []);
  expectConfigError(
    () => parse({ voice_presets: { v: { voice_id: 7 } } }),
    'models[0].voice_presets.v.voice_id',
    7,
  );
  expectConfigError(
    () => parse({ voice_presets: { v: { voice_id: 'x', reference_text: null } } }),
    'models[0].voice_presets.v.reference_text',
    null,
  );
  expectConfigError(
    () => parse({ voice_presets: { 'my voice': { voice_ref: '' } } }),
    'models[0].voice_presets["my voice"].voice_ref',
    '',
  );
});

test('voice_presets: unknown preset fields are notices', () => {
  const { notices } = parse({ voice_presets: { v: { voice_id: 'x', pitch: 2 } } });
  assert.deepEqual(
    notices.map((n) => n.key),
    ['models[0].voice_presets.v.pitch'],
  );
});

test('default_voice_preset: an existing name or an inline preset', () => {
  const presets = { bob: { voice_id: 'bm_george' } };
  assert.equal(
    parse({ voice_presets: presets, default_voice_preset: 'bob' }).model.default_voice_preset,
    'bob',
  );
  assert.deepEqual(parse({ default_voice_preset: { voice_id: 'af_sky' } }).model.default_voice_preset, {
    voice_id: 'af_sky',
  });
  assert.deepEqual(
    parse({ default_voice_preset: { voice_ref: 'voices/alice.wav' } }).model.default_voice_preset,
    {
      voice_ref: path.join(baseDir, 'voices', 'alice.wav'),
    },
  );
  expectConfigError(
    () => parse({ voice_presets: presets, default_voice_preset: 'carol' }),
    'models[0].default_voice_preset',
    'carol',
    '"bob"',
  );
  expectConfigError(() => parse({ default_voice_preset: 'bob' }), 'models[0].default_voice_preset', 'bob');
  expectConfigError(() => parse({ default_voice_preset: 3 }), 'models[0].default_voice_preset', 3);
  expectConfigError(() => parse({ default_voice_preset: {} }), 'models[0].default_voice_preset', {});
  // Inherited names such as "toString" are not presets.
  expectConfigError(
    () => parse({ default_voice_preset: 'toString' }),
    'models[0].default_voice_preset',
    'toString',
  );
});

test('slots without --parallel-jobs: any slots key is an error, even 1 or null', () => {
  for (const value of [1, null, 4, 'x']) {
    expectConfigError(
      () => parse({ slots: value }),
      'models[0].slots',
      value,
      'slots requires --parallel-jobs at server startup',
    );
  }
  assert.equal(parse({}).model.slots, undefined);
});

test('slots with --parallel-jobs: an integer 1..16', () => {
  const parallel = { parallel: true };
  assert.equal(parse({}, parallel).model.slots, undefined);
  assert.equal(parse({ slots: 1 }, parallel).model.slots, 1);
  assert.equal(parse({ slots: 16 }, parallel).model.slots, 16);
  for (const bad of [null, true, '2', 1.5, 0, 17, -1]) {
    expectConfigError(
      () => parse({ slots: bad }, parallel),
      'models[0].slots',
      bad,
      'model slots must be an integer between 1 and 16',
    );
  }
});

test('unknown and unconfirmed keys become notices, not errors', () => {
  const { notices } = parse({ colour: 'blue', instance_count: 2, apikeys: { k: true } });
  assert.deepEqual(
    notices.map((n) => n.key),
    ['models[0].colour', 'models[0].instance_count', 'models[0].apikeys'],
  );
  assert.match(notices[0]!.message, /unknown key ignored/);
  assert.match(notices[1]!.message, /unconfirmed/);
  for (const n of notices) assert.ok(n.message.startsWith(n.key));
});

test('the context key prefixes every path', () => {
  expectConfigError(
    () => parseModelConfig({ ...base, busy_timeout_ms: -5 }, ctx({ key: 'models[1]' })),
    'models[1].busy_timeout_ms',
    -5,
    'models[1].busy_timeout_ms: -5 is invalid; expected an integer >= 0',
  );
});

test('voice_aliases: {alias: engine voice id}, both non-empty strings', () => {
  const { model, notices } = parse({ voice_aliases: { alloy: 'slt', narrator: 'rms', __proto__x: 'awb' } });
  assert.deepEqual(model.voice_aliases, { alloy: 'slt', narrator: 'rms', __proto__x: 'awb' });
  assert.deepEqual(notices, []);
  assert.equal(parse({}).model.voice_aliases, undefined);
  expectConfigError(() => parse({ voice_aliases: ['slt'] }), 'models[0].voice_aliases', ['slt'], '{alias');
  expectConfigError(() => parse({ voice_aliases: 'slt' }), 'models[0].voice_aliases', 'slt');
  expectConfigError(() => parse({ voice_aliases: { alloy: '' } }), 'models[0].voice_aliases.alloy', '');
  expectConfigError(() => parse({ voice_aliases: { alloy: 3 } }), 'models[0].voice_aliases.alloy', 3);
  expectConfigError(() => parse({ voice_aliases: { '': 'slt' } }), 'models[0].voice_aliases[""]', '');
});

test('model ids: at most 128 characters of letters, digits, _, - and ., as package ids', () => {
  for (const id of ['a', 'whisper-tiny.en', 'kokoro_v1', '-x', `m${'a'.repeat(127)}`])
    assert.equal(parse({ id }).model.id, id);
  const long = 'a'.repeat(1024 * 1024);
  const err = expectConfigError(() => parse({ id: long }), 'models[0].id', long, 'at most 128 characters');
  assert.ok(err.message.length < 300, `the message shows a cut value: ${err.message.length} chars`);
  for (const id of ['.hidden', '..', 'a/b', 'a b', 'a\nb', 'naïve', 'x:y'])
    expectConfigError(() => parse({ id }), 'models[0].id', id, "letters, digits, '_', '-' and '.'");
});

test('every model id voxd ships or documents is a valid id', () => {
  const root = new URL('../../../', import.meta.url);
  const ids = [...EMBEDDED_MODELS.map((m) => String(m['id'])), ...catalogPackages().map((p) => p.id)];
  for (const name of readdirSync(new URL('examples/', root)).filter((n) => n.endsWith('.json'))) {
    const config = JSON.parse(readFileSync(new URL(`examples/${name}`, root), 'utf8'));
    for (const model of config.models ?? []) ids.push(model.id);
  }
  assert.ok(ids.length > 10, `${ids.length} ids`);
  for (const id of ids) assert.match(id, MODEL_ID);
});
