import assert from 'node:assert/strict';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { defaultModelsRoot } from '../../src/config/data-dir.js';
import { DEFAULT_MODEL_ALIASES } from '../../src/config/embedded-models.js';
import { type CliOverrides, loadServerConfig } from '../../src/config/server-config.js';
import { expectConfigError } from '../helpers/config.js';

const knownFamilies = ['fixture', 'kokoro'];
const model = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  family: 'fixture',
  path: `m/${id}`,
  ...extra,
});

/** The folders writeConfig made, removed when the file's tests are done. */
const folders: string[] = [];
after(() => {
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
});

/** Writes `content` (JSON-encoded unless a string) as server.json in a fresh folder; returns its path. */
function writeConfig(content: unknown): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'voxd-config-'));
  folders.push(dir);
  const file = path.join(dir, 'server.json');
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

function load(top: Record<string, unknown>, overrides: CliOverrides = {}) {
  return loadServerConfig({
    configPath: writeConfig({ models: [model('a')], ...top }),
    overrides,
    knownFamilies,
  });
}

test('models_root: the config key resolves against the config folder, the flag against the cwd; the default is the data folder', () => {
  const { config } = load({ models_root: 'pkgs' });
  assert.equal(config.models_root, path.join(config.base_dir, 'pkgs'));
  assert.equal(
    load({ models_root: 'pkgs' }, { models_root: 'flagged' }).config.models_root,
    path.resolve('flagged'),
  );
  assert.throws(() => load({ models_root: '' }), /models_root: "" is invalid; expected a non-empty string/);
  assert.equal(defaultModelsRoot({ VOXD_DATA_DIR: '/srv/voxd' }), '/srv/voxd/models');
  assert.equal(defaultModelsRoot({ XDG_DATA_HOME: '/data' }), '/data/voxd/models');
  // XDG says a relative XDG_DATA_HOME is ignored.
  assert.equal(
    defaultModelsRoot({ XDG_DATA_HOME: 'rel', HOME: '/h' }),
    path.join(homedir(), '.local/share/voxd/models'),
  );
});

test('a minimal config gets every default', () => {
  const configPath = writeConfig({ models: [model('a')] });
  const { config, notices } = loadServerConfig({ configPath, overrides: {}, knownFamilies });
  const { models, ...rest } = config;
  assert.deepEqual(rest, {
    host: '127.0.0.1',
    port: 8080,
    wyoming_host: '127.0.0.1',
    cors_origins: '',
    allowed_hosts: [],
    ui: true,
    ui_management: false,
    backend: 'cpu',
    device: 0,
    threads: 1,
    lazy_load: false,
    log: false,
    log_request_body: false,
    log_level: 'info',
    max_request_body_bytes: 268435456,
    body_timeout_ms: 30000,
    max_json_body_bytes: 33554432,
    max_websocket_message_bytes: 8388608,
    max_inflight_body_bytes: 536870912,
    body_deadline_ms: 300000,
    max_connections: 512,
    max_realtime_sessions: 256,
    max_client_secrets: 1024,
    realtime_idle_timeout_ms: 300000,
    realtime_max_session_ms: 3600000,
    max_deepgram_sessions: 256,
    deepgram_idle_timeout_ms: 10000,
    deepgram_max_session_ms: 3600000,
    wyoming_idle_timeout_ms: 300000,
    bridge_idle_timeout_ms: 300000,
    chunking_vad_model: 'silero-vad',
    diarization_text_model: 'pocketsphinx',
    max_audio_seconds: 10800,
    max_input_chars: 100000,
    ffmpeg_path: 'ffmpeg',
    ffmpeg_timeout_ms: 120000,
    ffmpeg_decode_stall_ms: 10000,
    default_speech_format: 'wav',
    file_roots: [realpathSync(path.dirname(configPath))],
    busy_timeout_ms: 300000,
    max_queued_requests: 0,
    ready_when_saturated: false,
    max_loaded_models: 0,
    idle_unload_ms: 0,
    shutdown_timeout_ms: 30000,
    max_inference_ms: 0,
    min_free_memory_mb: 0,
    live_ingest: {
      idle_timeout_ms: 30000,
      total_timeout_ms: 600000,
      max_body_bytes: 536870912,
      max_chunk_bytes: 8388608,
      send_timeout_ms: 30000,
    },
    frontend_listener: '',
    frontend_options: {},
    parallel_jobs: false,
    model_aliases: DEFAULT_MODEL_ALIASES,
    base_dir: path.dirname(configPath),
    default_models_root: defaultModelsRoot(),
    models_root: defaultModelsRoot(),
    max_download_bytes: 17179869184,
    max_package_bytes: 34359738368,
    installer_allow_private_hosts: false,
    api_keys: [],
    open_endpoints: ['/health', '/ready', '/metrics'],
    insecure: false,
    enable_fixture: false,
  });
  assert.equal(models.length, 1);
  assert.equal(models[0]!.lazy, false);
  assert.deepEqual(notices, []);
});

test('every top-level value is taken from the file', () => {
  const dir = path.dirname(writeConfig({}));
  mkdirSync(path.join(dir, 'voices'));
  const configPath = path.join(dir, 'server.json');
  writeFileSync(
    configPath,
    JSON.stringify({
      host: '0.0.0.0',
      port: 9000,
      cors_origins: '*',
      ui: false,
      ui_management: true,
      backend: 'cpu',
      device: 0,
      threads: 4,
      lazy_load: true,
      log_request_body: true,
      max_request_body_bytes: 1024,
      busy_timeout_ms: 0,
      max_loaded_models: 2,
      idle_unload_ms: 5000,
      min_free_memory_mb: 256,
      live_ingest: { idle_timeout_ms: 0, max_chunk_bytes: 4096 },
      voice_dir: 'voices',
      models: [model('a'), model('b', { lazy: false })],
    }),
  );
  const { config } = loadServerConfig({ configPath, overrides: {}, knownFamilies });
  assert.equal(config.host, '0.0.0.0');
  assert.equal(config.port, 9000);
  assert.equal(config.cors_origins, '*');
  assert.equal(config.ui, false);
  assert.equal(config.ui_management, true);
  assert.equal(config.threads, 4);
  assert.equal(config.lazy_load, true);
  assert.equal(config.log_request_body, true);
  assert.equal(config.max_request_body_bytes, 1024);
  assert.equal(config.busy_timeout_ms, 0);
  assert.equal(config.max_loaded_models, 2);
  assert.equal(config.idle_unload_ms, 5000);
  assert.equal(config.min_free_memory_mb, 256);
  assert.deepEqual(config.live_ingest, {
    idle_timeout_ms: 0,
    total_timeout_ms: 600000,
    max_body_bytes: 536870912,
    max_chunk_bytes: 4096,
    send_timeout_ms: 30000,
  });
  assert.equal(config.voice_dir, path.join(dir, 'voices'));
  // lazy_load is each model's default; an explicit lazy wins.
  assert.deepEqual(
    config.models.map((m) => [m.id, m.lazy]),
    [
      ['a', true],
      ['b', false],
    ],
  );
});

test('relative model paths resolve against the config folder, not the cwd', () => {
  const configPath = writeConfig({ models: [model('a'), model('b', { path: '/abs/b.gguf' })] });
  const { config } = loadServerConfig({ configPath, overrides: {}, knownFamilies });
  assert.equal(config.models[0]!.path, path.join(path.dirname(configPath), 'm', 'a'));
  assert.equal(config.models[1]!.path, '/abs/b.gguf');
});

test('a relative --config path resolves against the cwd', () => {
  const configPath = writeConfig({ models: [model('a')] });
  const relative = path.relative(process.cwd(), configPath);
  const { config } = loadServerConfig({ configPath: relative, overrides: {}, knownFamilies });
  assert.equal(config.base_dir, path.dirname(configPath));
});

test('without --config: the embedded models, lazily loaded; base_dir is the cwd', () => {
  const families = [
    ...knownFamilies,
    'espeak_tts',
    'festival_tts',
    'flite_tts',
    'pocketsphinx_asr',
    'silero_vad',
    'classic_diar',
  ];
  const { config } = loadServerConfig({ overrides: {}, knownFamilies: families });
  assert.deepEqual(
    config.models.map((m) => [m.id, m.family, m.task, m.mode, m.lazy, m.path]),
    [
      ['espeak', 'espeak_tts', 'tts', 'streaming', true, ''],
      ['festival', 'festival_tts', 'tts', 'streaming', true, ''],
      ['flite', 'flite_tts', 'tts', 'streaming', true, ''],
      ['pocketsphinx', 'pocketsphinx_asr', 'asr', 'streaming', true, ''],
      ['silero-vad', 'silero_vad', 'vad', 'offline', true, ''],
      ['diarizer', 'classic_diar', 'diar', 'streaming', true, ''],
    ],
  );
  assert.equal(config.lazy_load, true);
  assert.equal(config.ui_management, false);
  assert.equal(config.base_dir, process.cwd());
  assert.equal(config.port, 8080);
  assert.equal(
    loadServerConfig({ overrides: { ui_management: true }, knownFamilies: families }).config.ui_management,
    true,
  );
});

test('an unreadable file, bad JSON or a non-object top level fail under "config"', () => {
  const missing = path.join(tmpdir(), 'voxd-definitely-missing', 'server.json');
  expectConfigError(
    () => loadServerConfig({ configPath: missing, overrides: {}, knownFamilies }),
    'config',
    missing,
    'cannot read',
  );
  const dir = path.dirname(writeConfig({}));
  expectConfigError(() => loadServerConfig({ configPath: dir, overrides: {}, knownFamilies }), 'config', dir);
  const bad = writeConfig('{"port": 80,');
  const err = expectConfigError(
    () => loadServerConfig({ configPath: bad, overrides: {}, knownFamilies }),
    'config',
    bad,
    'not valid JSON',
  );
  let jsonMessage = '';
  try {
    JSON.parse('{"port": 80,');
  } catch (e) {
    jsonMessage = (e as Error).message;
  }
  assert.ok(err.message.includes(jsonMessage));
  for (const top of ['[]', 'null', '5', '"x"']) {
    const file = writeConfig(top);
    expectConfigError(
      () => loadServerConfig({ configPath: file, overrides: {}, knownFamilies }),
      'config',
      file,
      'JSON object',
    );
  }
});

test('a UTF-8 BOM is tolerated', () => {
  const file = writeConfig(`\uFEFF${JSON.stringify({ models: [model('a')] })}`);
  assert.equal(loadServerConfig({ configPath: file, overrides: {}, knownFamilies }).config.models.length, 1);
});

test('host: any IP literal, no host names', () => {
  assert.equal(load({ host: '0.0.0.0' }).config.host, '0.0.0.0');
  assert.equal(load({ host: '::1' }).config.host, '::1');
  for (const bad of ['localhost', '999.1.1.1', '', 5, null]) {
    expectConfigError(() => load({ host: bad }), 'host', bad);
  }
});

test('port: 0..65535, 0 picks a free port', () => {
  assert.equal(load({ port: 0 }).config.port, 0);
  assert.equal(load({ port: 65535 }).config.port, 65535);
  for (const bad of [-1, 65536, 1.5, '80', null, true]) {
    expectConfigError(() => load({ port: bad }), 'port', bad, '0..65535');
  }
});

test('cors_origins: "" or "*"', () => {
  assert.equal(load({ cors_origins: '' }).config.cors_origins, '');
  for (const bad of ['http://x', 1, null, true]) {
    expectConfigError(() => load({ cors_origins: bad }), 'cors_origins', bad);
  }
});

test('allowed_hosts: host names, `.suffix` names or "*" alone; the flag takes them comma-separated', () => {
  const names = ['voxd.example.com', '.Example.org', 'voxd', '192.168.1.5', '[::1]'];
  assert.deepEqual(load({ allowed_hosts: names }).config.allowed_hosts, names);
  assert.deepEqual(load({ allowed_hosts: ['*'] }).config.allowed_hosts, ['*']);
  assert.deepEqual(
    load({ allowed_hosts: ['a.example'] }, { allowed_hosts: 'b.example, c.example' }).config.allowed_hosts,
    ['b.example', 'c.example'],
  );
  assert.deepEqual(load({ allowed_hosts: ['a.example'] }, { allowed_hosts: '' }).config.allowed_hosts, []);
  // A scheme or a port could never match a Host's name, so the entry is refused rather than ignored.
  for (const bad of ['http://voxd.example.com', 'voxd.example.com:8080', 'a b', '', 7]) {
    expectConfigError(() => load({ allowed_hosts: ['ok.example', bad] }), 'allowed_hosts[1]', bad);
  }
  expectConfigError(() => load({ allowed_hosts: 'voxd.example.com' }), 'allowed_hosts', 'voxd.example.com');
  expectConfigError(() => load({ allowed_hosts: ['*', 'a.example'] }), 'allowed_hosts', ['*', 'a.example']);
  expectConfigError(() => load({}, { allowed_hosts: 'a.example,x:1' }), '--allowed-hosts', 'x:1');
});

test('boolean keys reject other types', () => {
  for (const name of ['ui', 'ui_management', 'lazy_load', 'log_request_body']) {
    for (const bad of ['yes', 1, null]) {
      expectConfigError(() => load({ [name]: bad }), name, bad, 'true or false');
    }
  }
});

test('non-negative integer keys reject negatives, fractions and strings', () => {
  const names = [
    'max_request_body_bytes',
    'body_timeout_ms',
    'max_json_body_bytes',
    'max_inflight_body_bytes',
    'body_deadline_ms',
    'max_connections',
    'max_audio_seconds',
    'max_input_chars',
    'busy_timeout_ms',
    'max_loaded_models',
    'idle_unload_ms',
    'min_free_memory_mb',
    'device',
  ];
  for (const name of names) {
    assert.equal((load({ [name]: 0 }).config as unknown as Record<string, unknown>)[name], 0);
    for (const bad of [-5, 1.5, '10', null, 2 ** 53]) {
      expectConfigError(() => load({ [name]: bad }), name, bad, 'integer >= 0');
    }
  }
  assert.equal(load({ max_request_body_bytes: 2 ** 53 - 1 }).config.max_request_body_bytes, 2 ** 53 - 1);
});

test('threads: an integer > 0', () => {
  assert.equal(load({ threads: 8 }).config.threads, 8);
  for (const bad of [0, -1, 1.5, '2', null]) {
    expectConfigError(() => load({ threads: bad }), 'threads', bad, 'integer >= 1');
  }
});

test('backend: cpu is silent, other backends give a notice, rocm means hip, best is rejected', () => {
  assert.deepEqual(load({ backend: 'cpu' }).notices, []);
  for (const name of ['cuda', 'vulkan', 'metal', 'hip']) {
    const { config, notices } = load({ backend: name });
    assert.equal(config.backend, name);
    assert.deepEqual(
      notices.map((n) => n.key),
      ['backend'],
    );
    assert.match(notices[0]!.message, /CPU/);
  }
  assert.equal(load({ backend: 'rocm' }).config.backend, 'hip');
  expectConfigError(() => load({ backend: 'best' }), 'backend', 'best', 'not allowed');
  for (const bad of ['tpu', 'CPU', 5, null]) {
    expectConfigError(() => load({ backend: bad }), 'backend', bad, 'cpu, cuda');
  }
});

test('device: a non-zero device gives a notice', () => {
  const { config, notices } = load({ device: 1 });
  assert.equal(config.device, 1);
  assert.deepEqual(
    notices.map((n) => n.key),
    ['device'],
  );
});

test('live_ingest: bad blocks and values are rejected', () => {
  expectConfigError(() => load({ live_ingest: 'x' }), 'live_ingest', 'x');
  expectConfigError(() => load({ live_ingest: null }), 'live_ingest', null);
  expectConfigError(() => load({ live_ingest: { chunk: 1 } }), 'live_ingest.chunk', 'chunk', 'unknown');
  expectConfigError(() => load({ live_ingest: { max_chunk_bytes: 0 } }), 'live_ingest.max_chunk_bytes', 0);
  for (const name of ['idle_timeout_ms', 'total_timeout_ms', 'max_body_bytes', 'send_timeout_ms']) {
    assert.equal(
      (load({ live_ingest: { [name]: 0 } }).config.live_ingest as unknown as Record<string, number>)[name],
      0,
    );
    for (const bad of [-1, '5', 2.5, true, 2 ** 53]) {
      expectConfigError(() => load({ live_ingest: { [name]: bad } }), `live_ingest.${name}`, bad);
    }
  }
});

test('model_spec_override resolves against the config folder and gives a notice', () => {
  const configPath = writeConfig({ models: [model('a')], model_spec_override: 'specs/x.json' });
  const { config, notices } = loadServerConfig({ configPath, overrides: {}, knownFamilies });
  assert.equal(config.model_spec_override, path.join(path.dirname(configPath), 'specs', 'x.json'));
  assert.deepEqual(
    notices.map((n) => n.key),
    ['model_spec_override'],
  );
  expectConfigError(() => load({ model_spec_override: 5 }), 'model_spec_override', 5);
  expectConfigError(() => load({ model_spec_override: '' }), 'model_spec_override', '');
});

test('voice_dir must be an existing directory', () => {
  expectConfigError(
    () => load({ voice_dir: 'no-such-dir' }),
    'voice_dir',
    'no-such-dir',
    'no such directory',
  );
  expectConfigError(() => load({ voice_dir: 'server.json' }), 'voice_dir', 'server.json');
  expectConfigError(() => load({ voice_dir: 3 }), 'voice_dir', 3);
  expectConfigError(() => load({ voice_dir: '' }), 'voice_dir', '');
  assert.equal(load({ voice_dir: '.' }).config.voice_dir !== undefined, true);
});

test('frontend_listener: "", https or websocket; any other name is an error naming it and the accepted ones', () => {
  assert.equal(load({}).config.frontend_listener, '');
  assert.equal(load({ frontend_listener: 'websocket' }).config.frontend_listener, 'websocket');
  assert.equal(load({}, { frontend_listener: 'websocket' }).config.frontend_listener, 'websocket');
  for (const name of ['wss', 'WebSocket', 'http']) {
    expectConfigError(
      () => load({ frontend_listener: name }),
      'frontend_listener',
      name,
      '"https" and "websocket"',
    );
  }
  expectConfigError(
    () => load({}, { frontend_listener: 'grpc' }),
    '--frontend-listener',
    'grpc',
    '"websocket"',
  );
  expectConfigError(() => load({ frontend_listener: 1 }), 'frontend_listener', 1);
});

test('frontend_options: an error on the command line without a listener, ignored with a notice in the file; options a listener does not read are noticed', () => {
  expectConfigError(() => load({ frontend_options: 'x' }), 'frontend_options', 'x');
  expectConfigError(
    () => load({}, { frontend_options: { a: 'b' } }),
    '--frontend-option',
    { a: 'b' },
    'requires --frontend-listener',
  );
  let { config, notices } = load({ frontend_options: { cert: 'a.pem', port: 443 } });
  assert.deepEqual(config.frontend_options, { cert: 'a.pem', port: '443' });
  assert.deepEqual(
    notices.map((n) => n.key),
    ['frontend_options'],
  );
  ({ config, notices } = load({ frontend_listener: 'websocket', frontend_options: { port: 443 } }));
  assert.equal(config.tls, undefined);
  assert.deepEqual(
    notices.map((n) => n.message),
    ['frontend_options.port: not an option of the websocket listener (it takes none); ignored'],
  );
});

test("the https listener is voxd's TLS: cert_file and key_file (file: against the config folder; flags: against the cwd), or tls_cert_file/tls_key_file, never both", () => {
  const tls = fileURLToPath(new URL('../../../test/fixtures/tls/', import.meta.url));
  const cert = `${tls}cert.pem`;
  const key = `${tls}key.pem`;
  // Relative to the config folder (a config beside copies of them names them by file name).
  const dir = mkdtempSync(path.join(tmpdir(), 'voxd-https-'));
  copyFileSync(cert, path.join(dir, 'cert.pem'));
  copyFileSync(key, path.join(dir, 'key.pem'));
  const configPath = path.join(dir, 'server.json');
  writeFileSync(
    configPath,
    JSON.stringify({
      models: [model('a')],
      frontend_listener: 'https',
      frontend_options: { cert_file: 'cert.pem', key_file: 'key.pem', port: 1 },
    }),
  );
  const cwd = process.cwd();
  try {
    const { config, notices } = loadServerConfig({ configPath, overrides: {}, knownFamilies });
    assert.equal(config.tls?.cert.path, path.join(dir, 'cert.pem'));
    assert.equal(config.tls?.key.path, path.join(dir, 'key.pem'));
    assert.match(config.tls!.key.pem, /BEGIN PRIVATE KEY/);
    assert.deepEqual(
      notices.map((n) => n.message),
      ['frontend_options.port: not an option of the https listener (it takes cert_file, key_file); ignored'],
    );
    // The flags, as `--frontend-listener https --frontend-option cert_file=cert.pem ...`, against the cwd.
    process.chdir(dir);
    const flags = load(
      {},
      { frontend_listener: 'https', frontend_options: { cert_file: 'cert.pem', key_file: 'key.pem' } },
    );
    assert.equal(flags.config.tls?.cert.path, path.join(realpathSync(dir), 'cert.pem'));
    expectConfigError(
      () =>
        load(
          {},
          { frontend_listener: 'https', frontend_options: { cert_file: 'nope.pem', key_file: 'key.pem' } },
        ),
      '--frontend-option cert_file',
      'nope.pem',
      'cannot read',
    );
  } finally {
    process.chdir(cwd);
    rmSync(dir, { recursive: true, force: true });
  }
  // tls_cert_file/tls_key_file serve the https listener too.
  assert.equal(
    load({ frontend_listener: 'https', tls_cert_file: cert, tls_key_file: key }).config.tls?.cert.path,
    cert,
  );
  expectConfigError(
    () => load({ frontend_listener: 'https' }),
    'frontend_listener',
    'https',
    'cert_file and key_file',
  );
  expectConfigError(
    () => load({ frontend_listener: 'https', frontend_options: { cert_file: cert } }),
    'frontend_options.cert_file',
    cert,
    'key_file is missing',
  );
  expectConfigError(
    () =>
      load({
        frontend_listener: 'https',
        tls_cert_file: cert,
        tls_key_file: key,
        frontend_options: { cert_file: cert, key_file: key },
      }),
    'frontend_options',
    { cert_file: cert, key_file: key },
    'keep one',
  );
  expectConfigError(
    () =>
      load({
        frontend_listener: 'https',
        frontend_options: { cert_file: key.replace('key.pem', 'none.pem'), key_file: key },
      }),
    'frontend_options.cert_file',
    key.replace('key.pem', 'none.pem'),
    'cannot read',
  );
});

test('models: required, an array, non-empty unless ui_management', () => {
  const noModels = writeConfig({});
  expectConfigError(
    () => loadServerConfig({ configPath: noModels, overrides: {}, knownFamilies }),
    'models',
    undefined,
  );
  expectConfigError(() => load({ models: {} }), 'models', {}, 'array');
  expectConfigError(() => load({ models: [] }), 'models', [], 'ui_management');
  assert.deepEqual(load({ models: [], ui_management: true }).config.models, []);
  assert.deepEqual(
    loadServerConfig({ configPath: noModels, overrides: { ui_management: true }, knownFamilies }).config
      .models,
    [],
  );
});

test('models: errors name the entry index', () => {
  expectConfigError(() => load({ models: [model('a'), 5] }), 'models[1]', 5);
  expectConfigError(
    () => load({ models: [model('a'), model('b', { busy_timeout_ms: -5 })] }),
    'models[1].busy_timeout_ms',
    -5,
  );
  expectConfigError(
    () => load({ models: [model('a', { family: 'nope' })] }),
    'models[0].family',
    'nope',
    'fixture',
  );
  expectConfigError(
    () => load({ models: [model('a', { task: 'sing' })] }),
    'models[0].task',
    'sing',
    'vad, asr',
  );
});

test('models: a duplicate id names both entries', () => {
  expectConfigError(
    () => load({ models: [model('a'), model('b'), model('a')] }),
    'models[2].id',
    'a',
    'models[2].id: "a" is a duplicate of models[0].id',
  );
});

test('models: slots need --parallel-jobs', () => {
  const models = [model('a', { slots: 2 })];
  expectConfigError(
    () => load({ models }),
    'models[0].slots',
    2,
    'slots requires --parallel-jobs at server startup',
  );
  const { config } = load({ models }, { parallel_jobs: true });
  assert.equal(config.parallel_jobs, true);
  assert.equal(config.models[0]!.slots, 2);
  expectConfigError(
    () => load({ models: [model('a', { slots: 17 })] }, { parallel_jobs: true }),
    'models[0].slots',
    17,
    'model slots must be an integer between 1 and 16',
  );
});

test('unknown and unconfirmed top-level keys become notices', () => {
  const { notices } = load({ colour: 'blue', apikeys: { k: true } });
  assert.deepEqual(
    notices.map((n) => n.key),
    ['colour', 'apikeys'],
  );
  assert.match(notices[0]!.message, /unknown key ignored/);
  assert.match(notices[1]!.message, /unconfirmed/);
});

test('model notices are passed through', () => {
  const { notices } = load({ models: [model('a', { instance_count: 2 })] });
  assert.deepEqual(
    notices.map((n) => n.key),
    ['models[0].instance_count'],
  );
});

test('CLI overrides win over the file', () => {
  const { config } = load(
    { host: '0.0.0.0', port: 9000, threads: 2, ui: true, cors_origins: '', busy_timeout_ms: 5 },
    {
      host: '127.0.0.2',
      port: 0,
      threads: 3,
      ui: false,
      ui_management: true,
      cors_origins: '*',
      busy_timeout_ms: 7,
      max_loaded_models: 1,
      idle_unload_ms: 2,
      min_free_memory_mb: 3,
      device: 0,
      backend: 'cpu',
      log: true,
    },
  );
  assert.equal(config.host, '127.0.0.2');
  assert.equal(config.port, 0);
  assert.equal(config.threads, 3);
  assert.equal(config.ui, false);
  assert.equal(config.ui_management, true);
  assert.equal(config.cors_origins, '*');
  assert.equal(config.busy_timeout_ms, 7);
  assert.equal(config.max_loaded_models, 1);
  assert.equal(config.idle_unload_ms, 2);
  assert.equal(config.min_free_memory_mb, 3);
  assert.equal(config.log, true);
});

test('a bad CLI value is reported under its flag', () => {
  expectConfigError(() => load({ port: 80 }, { port: -1 }), '--port', -1, '0..65535');
  expectConfigError(() => load({}, { threads: 0 }), '--threads', 0);
  expectConfigError(() => load({}, { host: 'localhost' }), '--host', 'localhost');
  expectConfigError(() => load({}, { cors_origins: 'x' }), '--cors-origins', 'x');
  expectConfigError(() => load({}, { backend: 'best' }), '--backend', 'best');
  expectConfigError(() => load({}, { busy_timeout_ms: -1 }), '--busy-timeout-ms', -1);
  expectConfigError(() => load({}, { max_loaded_models: -1 }), '--max-loaded-models', -1);
  expectConfigError(() => load({}, { idle_unload_ms: -1 }), '--idle-unload-ms', -1);
  expectConfigError(() => load({}, { min_free_memory_mb: -1 }), '--min-free-memory-mb', -1);
  expectConfigError(() => load({}, { device: -1 }), '--device', -1);
  expectConfigError(() => load({}, { voice_dir: 'no-such-dir-xyz' }), '--voice-dir', 'no-such-dir-xyz');
  expectConfigError(() => load({}, { frontend_listener: 'wss' }), '--frontend-listener', 'wss');
  expectConfigError(() => load({}, { frontend_options: { a: 'b' } }), '--frontend-option', { a: 'b' });
  expectConfigError(() => load({}, { model_spec_override: '' }), '--model-spec-override', '');
  expectConfigError(() => load({}, { log_file: '' }), '--log-file', '');
  // The file's value is not checked once the flag replaces it.
  assert.equal(load({ port: -1 }, { port: 1234 }).config.port, 1234);
});

test('a CLI backend notice is keyed by the flag', () => {
  const { config, notices } = load({}, { backend: 'cuda' });
  assert.equal(config.backend, 'cuda');
  assert.deepEqual(
    notices.map((n) => n.key),
    ['--backend'],
  );
});

test('relative CLI paths resolve against the cwd', () => {
  const configPath = writeConfig({ models: [model('a')] });
  const dir = path.dirname(configPath);
  mkdirSync(path.join(dir, 'voices'));
  const relVoices = path.relative(process.cwd(), path.join(dir, 'voices'));
  const { config } = loadServerConfig({
    configPath,
    overrides: { voice_dir: relVoices, model_spec_override: 'specs', log_file: 'logs/voxd.log' },
    knownFamilies,
  });
  assert.equal(config.voice_dir, path.join(dir, 'voices'));
  assert.equal(config.model_spec_override, path.resolve(process.cwd(), 'specs'));
  assert.equal(config.log_file, path.resolve(process.cwd(), 'logs/voxd.log'));
});

test('tls_cert_file and tls_key_file: both or neither, readable PEM files, resolved against the config folder', () => {
  const tls = fileURLToPath(new URL('../../../test/fixtures/tls/', import.meta.url));
  const cert = `${tls}cert.pem`;
  const key = `${tls}key.pem`;
  const { config } = load({ tls_cert_file: cert, tls_key_file: key });
  assert.equal(config.tls?.cert.path, cert);
  assert.match(config.tls!.key.pem, /BEGIN PRIVATE KEY/);
  assert.equal(load({}).config.tls, undefined);
  expectConfigError(() => load({ tls_cert_file: cert }), 'tls_cert_file', cert, 'tls_key_file is missing');
  expectConfigError(() => load({ tls_key_file: key }), 'tls_key_file', key, 'tls_cert_file is missing');
  expectConfigError(
    () => load({ tls_cert_file: '/nonexistent.pem', tls_key_file: key }),
    'tls_cert_file',
    '/nonexistent.pem',
    'cannot read',
  );
  const notPem = fileURLToPath(import.meta.url);
  expectConfigError(
    () => load({ tls_cert_file: notPem, tls_key_file: key }),
    'tls_cert_file',
    notPem,
    'not a PEM file',
  );
});

test('file_roots: the config folder and voice_dir by default, symlinks resolved; none without a config', () => {
  const configPath = writeConfig({ models: [model('a')] });
  const dir = path.dirname(configPath);
  mkdirSync(path.join(dir, 'voices'));
  symlinkSync(path.join(dir, 'voices'), path.join(dir, 'voice-link'));
  const withVoices = loadServerConfig({
    configPath,
    overrides: { voice_dir: path.join(dir, 'voice-link') },
    knownFamilies,
  }).config;
  assert.deepEqual(withVoices.file_roots, [realpathSync(dir), realpathSync(path.join(dir, 'voices'))]);
  const noConfig = loadServerConfig({
    overrides: {},
    knownFamilies: [
      'fixture',
      'espeak_tts',
      'festival_tts',
      'flite_tts',
      'pocketsphinx_asr',
      'silero_vad',
      'classic_diar',
    ],
  });
  assert.deepEqual(noConfig.config.file_roots, []);
});

test('file_roots from the file (a list, relative to its folder) and --file-roots (comma-separated)', () => {
  const configPath = writeConfig({ models: [model('a')], file_roots: ['a', 'b'] });
  const dir = path.dirname(configPath);
  for (const sub of ['a', 'b', 'c']) mkdirSync(path.join(dir, sub));
  const fromFile = loadServerConfig({ configPath, overrides: {}, knownFamilies }).config;
  assert.deepEqual(
    fromFile.file_roots,
    [path.join(dir, 'a'), path.join(dir, 'b')].map((d) => realpathSync(d)),
  );
  const fromFlag = loadServerConfig({
    configPath,
    overrides: { file_roots: `${path.join(dir, 'c')},${path.join(dir, 'a')}` },
    knownFamilies,
  }).config;
  assert.deepEqual(
    fromFlag.file_roots,
    [path.join(dir, 'c'), path.join(dir, 'a')].map((d) => realpathSync(d)),
  );
  assert.deepEqual(load({ file_roots: [] }).config.file_roots, [], 'an empty list turns server files off');
  expectConfigError(() => load({ file_roots: ['no-such-dir'] }), 'file_roots[0]', 'no-such-dir');
  expectConfigError(() => load({ file_roots: 'x' }), 'file_roots', 'x', 'a list of folders');
  expectConfigError(() => load({}, { file_roots: 'no-such-dir' }), '--file-roots', 'no-such-dir');
});

test('per-model max_audio_seconds and max_input_chars', () => {
  const { config } = load({ models: [model('a', { max_audio_seconds: 60, max_input_chars: 500 })] });
  assert.equal(config.models[0]!.max_audio_seconds, 60);
  assert.equal(config.models[0]!.max_input_chars, 500);
  expectConfigError(
    () => load({ models: [model('a', { max_audio_seconds: -1 })] }),
    'models[0].max_audio_seconds',
    -1,
  );
});

test("model_aliases: OpenAI's names map to the embedded models by default, with or without a config", () => {
  assert.deepEqual(DEFAULT_MODEL_ALIASES, {
    'whisper-1': 'pocketsphinx',
    'gpt-4o-transcribe': 'pocketsphinx',
    'gpt-4o-mini-transcribe': 'pocketsphinx',
    'gpt-realtime-whisper': 'pocketsphinx',
    'gpt-4o-transcribe-diarize': 'diarizer',
    'tts-1': 'flite',
    'tts-1-hd': 'flite',
    'gpt-4o-mini-tts': 'flite',
  });
  const embedded = loadServerConfig({
    overrides: {},
    knownFamilies: [
      'pocketsphinx_asr',
      'flite_tts',
      'espeak_tts',
      'festival_tts',
      'silero_vad',
      'classic_diar',
    ],
  });
  assert.deepEqual(embedded.config.model_aliases, DEFAULT_MODEL_ALIASES);
  // Every default names an embedded model.
  const ids = new Set(embedded.config.models.map((m) => m.id));
  for (const target of Object.values(DEFAULT_MODEL_ALIASES)) assert.ok(ids.has(target), target);
  assert.deepEqual(load({}).notices, []);
});

test('model_aliases: the file adds and repoints names, null removes one; --model-alias wins name by name, "name=" removes', () => {
  const { config, notices } = load(
    { models: [model('a'), model('b')], model_aliases: { 'whisper-1': 'a', fast: 'b', 'tts-1-hd': null } },
    { model_aliases: { fast: 'a', 'tts-1': '', slow: 'b' } },
  );
  assert.deepEqual(config.model_aliases, {
    'whisper-1': 'a',
    'gpt-4o-transcribe': 'pocketsphinx',
    'gpt-4o-mini-transcribe': 'pocketsphinx',
    'gpt-realtime-whisper': 'pocketsphinx',
    'gpt-4o-transcribe-diarize': 'diarizer',
    'gpt-4o-mini-tts': 'flite',
    fast: 'a',
    slow: 'b',
  });
  assert.deepEqual(notices, []);
  // "__proto__" is an ordinary name, not the object's prototype.
  const proto = load({ model_aliases: JSON.parse('{"__proto__": "a"}') }).config.model_aliases;
  assert.equal(Object.hasOwn(proto, '__proto__'), true);
  assert.equal(Object.getPrototypeOf(proto), Object.prototype);
});

test('model_aliases: a model id always wins; an alias naming it, or another alias, or nothing valid, is an error', () => {
  // A default whose name a model has is simply not used.
  const shadowed = load({ models: [model('whisper-1')] }).config.model_aliases;
  assert.equal(Object.hasOwn(shadowed, 'whisper-1'), false);
  expectConfigError(
    () => load({ model_aliases: { a: 'pocketsphinx' } }),
    'model_aliases.a',
    'a',
    'the id of a configured model',
  );
  expectConfigError(() => load({}, { model_aliases: { a: 'x' } }), '--model-alias', 'a', 'configured model');
  expectConfigError(
    () => load({ model_aliases: { fast: 'tts-1' } }),
    'model_aliases.fast',
    'tts-1',
    'is itself an alias (of "flite")',
  );
  expectConfigError(() => load({ model_aliases: ['a'] }), 'model_aliases', ['a'], '"name": "model id"');
  expectConfigError(() => load({ model_aliases: { x: 3 } }), 'model_aliases.x', 3, 'a model id, or null');
  expectConfigError(
    () => load({ model_aliases: { 'x/y': 'a' } }),
    'model_aliases["x/y"]',
    'x/y',
    'a model id holds',
  );
  expectConfigError(
    () => load({ model_aliases: { x: '../a' } }),
    'model_aliases.x',
    '../a',
    'a model id holds',
  );
});

test('model_aliases: a name for a model neither configured nor installed is a notice, not an error', () => {
  const { config, notices } = load({ model_aliases: { 'whisper-1': 'whisper-base.en' } });
  assert.equal(config.model_aliases['whisper-1'], 'whisper-base.en');
  assert.deepEqual(
    notices.map((n) => n.key),
    ['model_aliases["whisper-1"]'],
  );
  assert.match(notices[0]!.message, /neither a configured model nor installed in the models root/);
  // Installed in the models root: no notice.
  const root = mkdtempSync(path.join(tmpdir(), 'voxd-root-'));
  folders.push(root);
  mkdirSync(path.join(root, 'whisper-base.en'));
  assert.deepEqual(
    load({ models_root: root, model_aliases: { 'whisper-1': 'whisper-base.en' } }).notices,
    [],
  );
});

test('the Wyoming settings: off unless wyoming_port is set; zeroconf needs the port; the host is an address', () => {
  const base = { models: [model('m')] };
  const off = load(base).config;
  assert.equal(off.wyoming_port, undefined);
  assert.equal(off.wyoming_host, '127.0.0.1');
  const on = load({ ...base, wyoming_port: 10300, wyoming_zeroconf: 'voxd', wyoming_asr_model: 'm' }).config;
  assert.deepEqual([on.wyoming_port, on.wyoming_zeroconf, on.wyoming_asr_model], [10300, 'voxd', 'm']);
  assert.throws(
    () => load({ ...base, wyoming_zeroconf: 'voxd' }),
    /wyoming_zeroconf: "voxd" is invalid; it announces the Wyoming listener; set wyoming_port too/,
  );
  assert.throws(() => load({ ...base, wyoming_port: 70000 }), /wyoming_port: 70000 is invalid/);
  assert.throws(() => load({ ...base, wyoming_host: 'example.com' }), /wyoming_host/);
});
