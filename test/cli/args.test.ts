import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseServeArgs, SERVE_HELP } from '../../src/cli/args.js';
import { ConfigError } from '../../src/config/errors.js';

function expectFlagError(argv: string[], key: string, ...fragments: string[]): ConfigError {
  let caught: unknown;
  try {
    parseServeArgs(argv);
  } catch (err) {
    caught = err;
  }
  assert.ok(
    caught instanceof ConfigError,
    `expected a ConfigError for ${argv.join(' ')}, got ${String(caught)}`,
  );
  assert.equal(caught.key, key);
  assert.ok(caught.message.includes(key), `"${caught.message}" does not name ${key}`);
  for (const fragment of fragments) {
    assert.ok(caught.message.includes(fragment), `"${caught.message}" lacks "${fragment}"`);
  }
  assert.ok(!caught.message.includes('\n'));
  return caught;
}

test('no arguments: nothing overridden', () => {
  assert.deepEqual(parseServeArgs([]), { overrides: {}, help: false, version: false });
});

test('every value flag is parsed', () => {
  const args = parseServeArgs([
    '--config',
    'server.json',
    '--host',
    '0.0.0.0',
    '--port',
    '9000',
    '--busy-timeout-ms',
    '0',
    '--max-loaded-models',
    '2',
    '--idle-unload-ms',
    '60000',
    '--shutdown-timeout-ms',
    '5000',
    '--min-free-memory-mb',
    '512',
    '--cors-origins',
    '*',
    '--log-file',
    'voxd.log',
    '--log-level',
    'debug',
    '--backend',
    'cuda',
    '--device',
    '1',
    '--threads',
    '8',
    '--voice-dir',
    'voices',
    '--model-spec-override',
    'specs',
    '--frontend-listener',
    'https',
    '--frontend-option',
    'cert=a.pem',
    '--frontend-option',
    'url=http://x/?a=b',
  ]);
  assert.equal(args.configPath, 'server.json');
  assert.deepEqual(args.overrides, {
    host: '0.0.0.0',
    port: 9000,
    busy_timeout_ms: 0,
    max_loaded_models: 2,
    idle_unload_ms: 60000,
    shutdown_timeout_ms: 5000,
    min_free_memory_mb: 512,
    cors_origins: '*',
    log_file: 'voxd.log',
    log_level: 'debug',
    backend: 'cuda',
    device: 1,
    threads: 8,
    voice_dir: 'voices',
    model_spec_override: 'specs',
    frontend_listener: 'https',
    frontend_options: { cert: 'a.pem', url: 'http://x/?a=b' },
  });
});

test('switches', () => {
  const args = parseServeArgs(['--ui', '--ui-management', '--parallel-jobs', '--log']);
  assert.deepEqual(args.overrides, { ui: true, ui_management: true, parallel_jobs: true, log: true });
  assert.equal(parseServeArgs(['--no-ui']).overrides.ui, false);
  assert.equal(parseServeArgs(['--no-ui', '--ui']).overrides.ui, true);
  assert.equal(parseServeArgs(['--ui', '--no-ui']).overrides.ui, false);
  assert.equal(parseServeArgs(['-h']).help, true);
  assert.equal(parseServeArgs(['--help']).help, true);
  assert.equal(parseServeArgs(['--version']).version, true);
});

test('the --flag=value form', () => {
  const args = parseServeArgs([
    '--port=0',
    '--config=a=b.json',
    '--cors-origins=',
    '--frontend-option=k=v=w',
  ]);
  assert.equal(args.overrides.port, 0);
  assert.equal(args.configPath, 'a=b.json');
  assert.equal(args.overrides.cors_origins, '');
  assert.deepEqual(args.overrides.frontend_options, { k: 'v=w' });
});

test('a later value wins', () => {
  assert.equal(parseServeArgs(['--port', '1', '--port', '2']).overrides.port, 2);
  assert.deepEqual(
    parseServeArgs(['--frontend-option', 'a=1', '--frontend-option', 'a=2']).overrides.frontend_options,
    { a: '2' },
  );
});

test('numbers must parse in full', () => {
  for (const bad of ['12x', '1.5', '0x10', '', ' 8', '1e3', 'abc']) {
    expectFlagError(['--port', bad], '--port', JSON.stringify(bad), 'integer');
  }
  expectFlagError(['--threads=two'], '--threads', '"two"');
  expectFlagError(['--device', '1,5'], '--device');
});

test('a negative number is taken as the value, and left to range checks', () => {
  assert.equal(parseServeArgs(['--device', '-1']).overrides.device, -1);
  assert.equal(parseServeArgs(['--port', '+80']).overrides.port, 80);
});

test('a missing value is an error naming the flag', () => {
  expectFlagError(['--port'], '--port', 'needs a value');
  expectFlagError(['--config', '--ui'], '--config', 'needs a value');
  expectFlagError(['--config='], '--config', '""');
  expectFlagError(['--log-file', ''], '--log-file');
});

test('an unknown flag or stray argument is an error', () => {
  const err = expectFlagError(['--foo'], '--foo', 'unknown flag --foo; run voxd --help');
  assert.equal(err.message, 'unknown flag --foo; run voxd --help');
  expectFlagError(['--foo=1'], '--foo', 'unknown flag');
  expectFlagError(['-x'], '-x', 'unknown flag');
  expectFlagError(['server.json'], 'server.json', 'unexpected argument');
  // Names inherited from Object.prototype are not flags.
  expectFlagError(['toString'], 'toString', 'unexpected argument');
  expectFlagError(['constructor', 'x'], 'constructor');
  expectFlagError(['__proto__'], '__proto__');
});

test('switches take no value', () => {
  expectFlagError(['--ui=false'], '--ui', 'takes no value');
  expectFlagError(['--log=1'], '--log', 'takes no value');
});

test('--frontend-option needs key=value', () => {
  expectFlagError(['--frontend-option', 'novalue'], '--frontend-option', '"novalue"', 'key=value');
  expectFlagError(['--frontend-option', '=x'], '--frontend-option', '"=x"');
  assert.deepEqual(parseServeArgs(['--frontend-option', 'k=']).overrides.frontend_options, { k: '' });
  const proto = parseServeArgs(['--frontend-option', '__proto__=x']).overrides.frontend_options!;
  assert.equal(Object.hasOwn(proto, '__proto__'), true);
  assert.equal(Object.getPrototypeOf(proto), Object.prototype);
});

test('--model-alias name=id is repeatable, the last of a name wins, "name=" keeps the empty id (a removal)', () => {
  const args = ['--model-alias', 'whisper-1=a', '--model-alias=tts-1=b', '--model-alias', 'whisper-1=c'];
  assert.deepEqual(parseServeArgs([...args, '--model-alias', 'tts-1-hd=']).overrides.model_aliases, {
    'whisper-1': 'c',
    'tts-1': 'b',
    'tts-1-hd': '',
  });
  expectFlagError(['--model-alias', 'whisper-1'], '--model-alias', '"whisper-1"', 'key=value');
});

test('SERVE_HELP lists every flag', () => {
  const flags = [
    '--config',
    '--host',
    '--port',
    '--busy-timeout-ms',
    '--max-queued-requests',
    '--ready-when-saturated',
    '--max-loaded-models',
    '--idle-unload-ms',
    '--shutdown-timeout-ms',
    '--max-inference-ms',
    '--tls-cert',
    '--tls-key',
    '--min-free-memory-mb',
    '--ui',
    '--no-ui',
    '--ui-management',
    '--cors-origins',
    '--parallel-jobs',
    '--log',
    '--log-file',
    '--log-level',
    '--backend',
    '--device',
    '--threads',
    '--voice-dir',
    '--model-spec-override',
    '--frontend-listener',
    '--frontend-option',
    '--model-alias',
    '--version',
    '-h, --help',
  ];
  for (const flag of flags) {
    assert.ok(SERVE_HELP.includes(`  ${flag} `), `help lacks ${flag}`);
    // Every flag the help lists is one the parser knows.
    if (!flag.startsWith('-h')) {
      assert.doesNotThrow(() => {
        try {
          parseServeArgs([flag, '1']);
        } catch (err) {
          if (err instanceof ConfigError && err.message.includes('unknown flag')) throw err;
        }
      });
    }
  }
  assert.match(SERVE_HELP, /default 8080/);
});
