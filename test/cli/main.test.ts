/**
 * The `voxd` command, run as a child process exactly as users run it. Every child is stopped by its
 * own pid in a `finally`, and every wait has a deadline so a broken server fails a test instead of
 * hanging the suite.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { COMMANDS } from '../../src/cli/commands.js';
import { TASK_TOKENS } from '../../src/config/types.js';
import { configFolder, DEADLINE_MS, type Exit, LISTENING, VoxdProcess } from '../helpers/cli.js';
import { DEFAULT_ALIAS_IDS } from '../helpers/models.js';
import { fixtureModel, waitUntil, withDeadline } from '../helpers/voxd.js';
import { smallWav } from '../http/wav-helpers.js';

const EXAMPLE_CONFIG = fileURLToPath(new URL('../../../examples/server.json', import.meta.url));
const PACKAGE_VERSION = (
  JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

const configs = configFolder('voxd-cli-');

/** The first word of each line of the help's "Commands:" section. */
function commandsSection(help: string): string[] {
  const section = /^Commands:\n((?: {2}\S.*\n)+)/m.exec(help)?.[1] ?? '';
  return section.split('\n').flatMap((line) => /^ {2}(\S+)/.exec(line)?.[1] ?? []);
}

/** Runs a command that is expected to end by itself, and always reaps it. */
async function runToExit(args: string[]): Promise<{ exit: Exit; stdout: string; stderr: string[] }> {
  const voxd = new VoxdProcess(args);
  try {
    const exit = await voxd.exit();
    return { exit, stdout: voxd.stdout, stderr: voxd.stderrLines };
  } finally {
    await voxd.stop();
  }
}

/** A config that starts cleanly on a free port, with nothing to notice but what a test adds. */
function validConfig(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { port: 0, ui: false, models: [fixtureModel('a')], ...extra };
}

async function fetchJson(url: string, init: RequestInit = {}): Promise<{ status: number; json: unknown }> {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(DEADLINE_MS) });
  const text = await res.text();
  return { status: res.status, json: JSON.parse(text) };
}

/** The pids of a process's direct children, read from /proc (Linux). */
function childrenOf(pid: number): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        // Field 4 of /proc/<pid>/stat is the parent pid; the command name before it is in parentheses.
        const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid;
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** Whether a process still runs (a zombie waiting to be reaped counts as gone). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/**
 * POSTs JSON on a connection of its own that closes after the response ("Connection: close"), so a
 * draining server has no idle keep-alive connection left to wait for.
 */
function postWithoutKeepAlive(url: string, body: unknown): Promise<{ status: number; json: unknown }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json' },
        signal: AbortSignal.timeout(DEADLINE_MS),
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => {
          try {
            resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) });
          } catch (err) {
            reject(err);
          }
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

describe('commands and flags', () => {
  test('--version prints "voxd <package.json version>" and exits 0', async () => {
    const { exit, stdout, stderr } = await runToExit(['--version']);
    assert.deepEqual(exit, { code: 0, signal: null });
    assert.equal(stdout, `voxd ${PACKAGE_VERSION}\n`);
    assert.deepEqual(stderr, []);
  });

  test('serve --version prints the same version', async () => {
    const { exit, stdout } = await runToExit(['serve', '--version']);
    assert.equal(exit.code, 0);
    assert.equal(stdout, `voxd ${PACKAGE_VERSION}\n`);
  });

  test('--help exits 0 and lists the commands and options', async () => {
    for (const flag of ['--help', '-h']) {
      const { exit, stdout, stderr } = await runToExit([flag]);
      assert.equal(exit.code, 0, flag);
      assert.deepEqual(stderr, [], flag);
      for (const word of ['serve', '--version', '--help']) {
        assert.ok(stdout.includes(word), `${flag} output lacks ${word}:\n${stdout}`);
      }
    }
  });

  test('--help lists every command the CLI dispatches (models included), and docs/cli.md does too', async () => {
    const { stdout: help } = await runToExit(['--help']);
    const listed = commandsSection(help);
    const docs = readFileSync(new URL('../../../docs/cli.md', import.meta.url), 'utf8');
    const synopsis = /^```\n([\s\S]*?)^```$/m.exec(docs)?.[1] ?? '';
    assert.ok(
      COMMANDS.some((c) => c.name === 'models'),
      'the command table has models',
    );
    for (const { name } of COMMANDS) {
      // Dispatched: the command's own help answers, not "unknown command".
      const own = await runToExit([name, '--help']);
      assert.equal(own.exit.code, 0, `voxd ${name} --help: ${own.stderr.join('\n')}`);
      assert.ok(own.stdout.startsWith(`Usage: voxd ${name}`), own.stdout);
      assert.ok(listed.includes(name), `voxd --help lacks ${name}:\n${help}`);
      assert.match(synopsis, new RegExp(`^voxd ${name}\\b`, 'm'), `docs/cli.md's synopsis lacks ${name}`);
    }
    // The help lists nothing the CLI does not run.
    assert.deepEqual(
      listed,
      COMMANDS.map((c) => c.name),
    );
    const unknown = await runToExit(['frobnicate']);
    assert.equal(unknown.exit.code, 2);
    assert.deepEqual(unknown.stderr, ['voxd: unknown command "frobnicate"; run voxd --help']);
  });

  test('serve --help exits 0 and lists the serve flags', async () => {
    const { exit, stdout, stderr } = await runToExit(['serve', '--help']);
    assert.equal(exit.code, 0);
    assert.deepEqual(stderr, []);
    const flags = [
      '--config',
      '--host',
      '--port',
      '--cors-origins',
      '--backend',
      '--threads',
      '--busy-timeout-ms',
      '--max-loaded-models',
      '--idle-unload-ms',
      '--min-free-memory-mb',
      '--parallel-jobs',
      '--voice-dir',
      '--models-root',
      '--log-file',
    ];
    for (const flag of flags) assert.ok(stdout.includes(flag), `serve --help lacks ${flag}`);
  });

  test('a models root that cannot be made stops startup with exit 2 and one line naming it', async () => {
    const file = join(configs.dir, 'a-file');
    writeFileSync(file, 'not a folder');
    const config = configs.write(validConfig());
    const { exit, stderr } = await runToExit([
      'serve',
      '--config',
      config,
      '--models-root',
      join(file, 'models'),
    ]);
    assert.equal(exit.code, 2);
    assert.equal(stderr.length, 1, stderr.join('\n'));
    assert.match(
      stderr[0]!,
      /^voxd: models_root: ".*a-file\/models" is invalid; the models root .* cannot be created/,
    );
  });

  test('an unknown command exits non-zero with one stderr line naming it', async () => {
    const { exit, stdout, stderr } = await runToExit(['frobnicate']);
    assert.notEqual(exit.code, 0);
    assert.equal(exit.signal, null);
    assert.equal(stdout, '');
    assert.equal(stderr.length, 1, stderr.join('\n'));
    assert.ok(stderr[0]!.startsWith('voxd: '), stderr[0]);
    assert.ok(stderr[0]!.includes('frobnicate'), stderr[0]);
  });

  test('an unknown flag exits non-zero with one stderr line naming it, with or without "serve"', async () => {
    for (const args of [
      ['serve', '--frobnicate'],
      ['--frobnicate'],
      ['serve', '--port=0', '--frobnicate=1'],
    ]) {
      const { exit, stderr } = await runToExit(args);
      assert.notEqual(exit.code, 0, args.join(' '));
      assert.equal(exit.signal, null);
      assert.equal(stderr.length, 1, stderr.join('\n'));
      assert.ok(stderr[0]!.startsWith('voxd: '), stderr[0]);
      assert.ok(stderr[0]!.includes('--frobnicate'), stderr[0]);
    }
  });
});

interface StartupErrorCase {
  name: string;
  config: Record<string, unknown> | string | null;
  args?: string[];
  key: string;
  /** Fragments the line must hold besides the key, the offending value among them. */
  values: string[];
}

const model = fixtureModel('a');
const STARTUP_ERRORS: StartupErrorCase[] = [
  { name: 'port of the wrong type', config: { port: '80', models: [model] }, key: 'port', values: ['"80"'] },
  { name: 'port out of range', config: { port: 70000, models: [model] }, key: 'port', values: ['70000'] },
  { name: 'threads 0', config: { threads: 0, models: [model] }, key: 'threads', values: ['0'] },
  {
    name: 'busy_timeout_ms -1',
    config: { busy_timeout_ms: -1, models: [model] },
    key: 'busy_timeout_ms',
    values: ['-1'],
  },
  {
    name: 'a flag out of range is reported under the flag',
    config: { port: 0, models: [model] },
    args: ['--port', '70000'],
    key: '--port',
    values: ['70000'],
  },
  {
    name: 'duplicate model id',
    config: { models: [fixtureModel('twin'), fixtureModel('twin')] },
    key: 'models[1].id',
    values: ['"twin"', 'models[0]'],
  },
  {
    name: 'unknown task token',
    config: { models: [fixtureModel('a', { task: 'speak' })] },
    key: 'models[0].task',
    values: ['"speak"'],
  },
  {
    name: 'unknown family',
    config: { models: [fixtureModel('a', { family: 'nope' })] },
    key: 'models[0].family',
    values: ['"nope"', 'fixture'],
  },
  {
    name: 'slots 1 without --parallel-jobs',
    config: { models: [fixtureModel('a', { slots: 1 })] },
    key: 'models[0].slots',
    values: ['1', '--parallel-jobs'],
  },
  {
    name: 'slots null without --parallel-jobs',
    config: { models: [fixtureModel('a', { slots: null })] },
    key: 'models[0].slots',
    values: ['null', '--parallel-jobs'],
  },
  {
    name: 'slots 17 with --parallel-jobs',
    config: { models: [fixtureModel('a', { slots: 17 })] },
    args: ['--parallel-jobs'],
    key: 'models[0].slots',
    values: ['17'],
  },
  { name: 'invalid JSON', config: '{"port": 0,', key: 'config', values: ['JSON'] },
  { name: 'missing config file', config: null, key: 'config', values: [] },
  {
    name: 'cors_origins "x"',
    config: { cors_origins: 'x', models: [model] },
    key: 'cors_origins',
    values: ['"x"'],
  },
];

describe('startup errors: non-zero exit and exactly one "voxd: " line naming key and value', {
  concurrency: 2,
}, () => {
  for (const c of STARTUP_ERRORS) {
    test(c.name, async () => {
      const path = c.config === null ? join(configs.dir, 'does-not-exist.json') : configs.write(c.config);
      const { exit, stderr } = await runToExit(['serve', '--config', path, ...(c.args ?? [])]);
      assert.equal(exit.signal, null);
      assert.notEqual(exit.code, 0);
      assert.equal(stderr.length, 1, `expected one stderr line, got:\n${stderr.join('\n')}`);
      const line = stderr[0]!;
      assert.ok(line.startsWith('voxd: '), line);
      assert.ok(line.includes(c.key), `"${line}" does not name ${c.key}`);
      // Files are named by their path, which is the "value" of the config key.
      const values = c.key === 'config' ? [path, ...c.values] : c.values;
      for (const value of values) assert.ok(line.includes(value), `"${line}" lacks ${value}`);
      if (c.name === 'unknown task token') {
        const words = new Set(line.split(/[^a-z0-9]+/));
        for (const token of TASK_TOKENS) assert.ok(words.has(token), `"${line}" does not list ${token}`);
      }
    });
  }
});

describe('serving', () => {
  test('CLI flags override the config file: config port 1 with --port 0 listens on a free port', async () => {
    const config = configs.write({ ...validConfig(), port: 1 });
    let exit: Exit | undefined;
    const voxd = new VoxdProcess(['serve', '--config', config, '--port', '0']);
    try {
      const { url, port } = await voxd.listening();
      assert.notEqual(port, 1);
      assert.ok(port > 0);
      const health = await fetchJson(`${url}/health`);
      assert.equal(health.status, 200);
      assert.equal((health.json as { status: string }).status, 'ok');
    } finally {
      exit = await voxd.stop();
    }
    assert.deepEqual(exit, { code: 0, signal: null });
  });

  test('an eager model that fails to load aborts startup with one line naming the model', async () => {
    const config = configs.write(
      validConfig({ models: [fixtureModel('broken-model', { load_options: { fail_load: 'true' } })] }),
    );
    const voxd = new VoxdProcess(['serve', '--config', config]);
    try {
      const exit = await voxd.exit();
      assert.equal(exit.signal, null);
      assert.notEqual(exit.code, 0);
      assert.doesNotMatch(voxd.stderr, LISTENING);
      const errors = voxd.stderrLines.filter((line) => line.startsWith('voxd: '));
      assert.equal(errors.length, 1, voxd.stderr);
      assert.ok(errors[0]!.includes('broken-model'), errors[0]);
    } finally {
      await voxd.stop();
    }
  });

  test('a lazy model that would fail to load does not stop startup', async () => {
    const config = configs.write(
      validConfig({
        models: [fixtureModel('later', { lazy: true, load_options: { fail_load: 'true' } })],
      }),
    );
    let exit: Exit | undefined;
    const voxd = new VoxdProcess(['serve', '--config', config]);
    try {
      await voxd.listening();
    } finally {
      exit = await voxd.stop();
    }
    assert.deepEqual(exit, { code: 0, signal: null });
  });

  test('a non-cpu backend starts, with a notice naming the backend', async () => {
    const config = configs.write(validConfig({ backend: 'cuda' }));
    let exit: Exit | undefined;
    const voxd = new VoxdProcess(['serve', '--config', config]);
    try {
      await voxd.listening();
      const notices = voxd.stderrLines.filter((line) => /notice/.test(line) && line.includes('backend'));
      assert.equal(notices.length, 1, voxd.stderr);
      assert.ok(notices[0]!.includes('cuda'), notices[0]);
    } finally {
      exit = await voxd.stop();
    }
    assert.deepEqual(exit, { code: 0, signal: null });
  });

  test('unknown keys start, with a notice naming each', async () => {
    const config = configs.write(
      validConfig({ mystery_key: 1, models: [fixtureModel('a', { model_mystery: true })] }),
    );
    let exit: Exit | undefined;
    const voxd = new VoxdProcess(['serve', '--config', config]);
    try {
      await voxd.listening();
      const notices = voxd.stderrLines.filter((line) => /notice/.test(line));
      assert.ok(
        notices.some((line) => line.includes('mystery_key')),
        `no notice names mystery_key:\n${voxd.stderr}`,
      );
      assert.ok(
        notices.some((line) => line.includes('models[0].model_mystery')),
        `no notice names models[0].model_mystery:\n${voxd.stderr}`,
      );
    } finally {
      exit = await voxd.stop();
    }
    assert.deepEqual(exit, { code: 0, signal: null });
  });

  test('README: with no config voxd serves the embedded models and speaks with real engines', async () => {
    let exit: Exit | undefined;
    const voxd = new VoxdProcess(['serve', '--port', '0']);
    try {
      const { url } = await voxd.listening();
      const models = await fetchJson(`${url}/v1/models`);
      const ids = (models.json as { data: { id: string }[] }).data.map((m) => m.id);
      // The embedded models, then OpenAI's names for flite, pocketsphinx and the diarizer (the default aliases).
      assert.deepEqual(ids, [
        'espeak',
        'festival',
        'flite',
        'pocketsphinx',
        'silero-vad',
        'diarizer',
        ...DEFAULT_ALIAS_IDS,
        'gpt-4o-transcribe-diarize',
      ]);
      for (const model of ['espeak', 'festival', 'flite']) {
        const res = await fetch(`${url}/v1/audio/speech`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model, input: 'Hello from voxd.' }),
          signal: AbortSignal.timeout(DEADLINE_MS),
        });
        const body = Buffer.from(await res.arrayBuffer());
        assert.equal(res.status, 200, body.toString('utf8'));
        assert.equal(body.subarray(0, 4).toString('ascii'), 'RIFF');
        assert.ok(body.length > 20_000, `${model}: ${body.length} bytes of speech`);
      }
    } finally {
      exit = await voxd.stop();
    }
    assert.deepEqual(exit, { code: 0, signal: null });
  });

  test('examples/server.json (fixture engine): query it, synthesize, and stop cleanly on SIGTERM', async () => {
    let exit: Exit | undefined;
    const voxd = new VoxdProcess(['serve', '--config', EXAMPLE_CONFIG, '--port', '0']);
    try {
      const { url } = await voxd.listening();

      const health = await fetchJson(`${url}/health`);
      assert.equal(health.status, 200);
      assert.equal((health.json as { status: string }).status, 'ok');
      assert.equal((health.json as { models: number }).models, 2);

      const models = await fetchJson(`${url}/v1/models`);
      assert.equal(models.status, 200);
      const ids = (models.json as { data: { id: string }[] }).data.map((m) => m.id).sort();
      assert.deepEqual(ids, ['echo-asr', 'tone']);

      const res = await fetch(`${url}/v1/audio/speech`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'tone', input: 'hello' }),
        signal: AbortSignal.timeout(DEADLINE_MS),
      });
      const body = Buffer.from(await res.arrayBuffer());
      assert.equal(res.status, 200, body.toString('utf8'));
      assert.match(res.headers.get('content-type') ?? '', /^audio\/wav/);
      assert.equal(body.subarray(0, 4).toString('ascii'), 'RIFF');
      assert.equal(body.subarray(8, 12).toString('ascii'), 'WAVE');
    } finally {
      exit = await voxd.stop();
    }
    assert.deepEqual(exit, { code: 0, signal: null });
  });

  test('SIGTERM drains a request in flight: it completes with 200 and voxd then exits 0', async () => {
    const record = join(configs.dir, 'inflight-record.jsonl');
    const gate = join(configs.dir, 'inflight-gate');
    const config = configs.write(validConfig({ models: [fixtureModel('ears')] }));
    let exit: Exit | undefined;
    const voxd = new VoxdProcess(['serve', '--config', config], {
      env: { ...process.env, VOXD_FIXTURE_RECORD: record },
    });
    try {
      const { url } = await voxd.listening();
      const inFlight = postWithoutKeepAlive(`${url}/v1/tasks/run`, {
        model: 'ears',
        text: 'still here',
        options: { run_gate: gate },
      });
      inFlight.catch(() => {});

      const events = () =>
        existsSync(record)
          ? readFileSync(record, 'utf8')
              .split('\n')
              .filter((line) => line.length > 0)
              .map((line) => JSON.parse(line) as { type: string; model: string; outcome?: string })
          : [];
      await waitUntil(
        'run-start in the fixture record',
        () => events().some((e) => e.type === 'run-start' && e.model === 'ears'),
        DEADLINE_MS,
      );

      voxd.child.kill('SIGTERM');
      // Open the gate only once voxd has taken the signal, so the request is in flight during the drain.
      await voxd.waitForStderr(/SIGTERM/, 'voxd to acknowledge SIGTERM');
      assert.equal(voxd.child.exitCode, null, 'voxd exited while a request was in flight');
      assert.ok(!events().some((e) => e.type === 'run-end'), 'the run ended before its gate opened');
      writeFileSync(gate, '');

      const res = await withDeadline(inFlight, 'the in-flight response', DEADLINE_MS);
      assert.equal(res.status, 200, JSON.stringify(res.json));
      const report = JSON.parse((res.json as { text: string }).text) as { text: string };
      assert.equal(report.text, 'still here');
      exit = await voxd.exit();

      const types = events()
        .filter((e) => e.model === 'ears')
        .map((e) => (e.type === 'run-end' ? `run-end:${e.outcome}` : e.type));
      assert.deepEqual(types.slice(types.indexOf('run-start')), [
        'run-start',
        'run-end:ok',
        'session-disposed',
        'weights-disposed',
      ]);
    } finally {
      exit = await voxd.stop();
    }
    assert.deepEqual(exit, { code: 0, signal: null });
  });

  test('requests naming FIFOs are answered, a normal path request is served, and SIGTERM then exits in time (issue 10)', async () => {
    // Before issue 10, opening these FIFOs held all four of node's file-I/O threads for good: the
    // requests never answered, later path reads hung, and SIGTERM never ended the process.
    const fifos = ['fifo-1.wav', 'fifo-2.wav', 'fifo-3.wav', 'fifo-4.wav'].map((name) =>
      join(configs.dir, name),
    );
    for (const fifo of fifos) if (!existsSync(fifo)) execFileSync('mkfifo', [fifo]);
    writeFileSync(join(configs.dir, 'fifo-normal.wav'), smallWav(320));
    const config = configs.write(validConfig({ shutdown_timeout_ms: 1000, models: [fixtureModel('ears')] }));
    let exit: Exit | undefined;
    const voxd = new VoxdProcess(['serve', '--config', config]);
    try {
      const { url } = await voxd.listening();
      const answers = await withDeadline(
        Promise.all(
          fifos.map((audio) => postWithoutKeepAlive(`${url}/v1/tasks/run`, { model: 'ears', audio })),
        ),
        'the four FIFO requests',
        DEADLINE_MS,
      );
      for (const res of answers) assert.equal(res.status, 403, JSON.stringify(res.json));
      const normal = await withDeadline(
        postWithoutKeepAlive(`${url}/v1/tasks/run`, { model: 'ears', audio: 'fifo-normal.wav' }),
        'a normal path request',
        DEADLINE_MS,
      );
      assert.equal(normal.status, 200, JSON.stringify(normal.json));
      voxd.child.kill('SIGTERM');
      exit = await voxd.exit(3000 + 2000);
    } finally {
      exit ??= await voxd.stop();
    }
    assert.deepEqual(exit, { code: 0, signal: null });
  });

  for (const n of [1, 2, 4]) {
    test(`[time.shutdown-queued-hung] --parallel-jobs, slots=${n}: SIGTERM with every slot spinning in a runner that ignores its abort: the deadline kills the runners, each request gets 503, voxd exits 0 by itself`, async () => {
      const record = join(configs.dir, `spin-${n}-record.jsonl`);
      const config = configs.write(
        validConfig({
          busy_timeout_ms: 0,
          shutdown_timeout_ms: 300,
          models: [fixtureModel('spin', { slots: n })],
        }),
      );
      let exit: Exit | undefined;
      const voxd = new VoxdProcess(['serve', '--parallel-jobs', '--config', config], {
        env: { ...process.env, VOXD_FIXTURE_RECORD: record },
      });
      try {
        const { url } = await voxd.listening();
        const spinning = Array.from({ length: n }, (_, i) =>
          postWithoutKeepAlive(`${url}/v1/tasks/run`, {
            model: 'spin',
            text: `${i}`,
            options: { spin: true },
          }),
        );
        for (const p of spinning) p.catch(() => {});
        const starts = () =>
          existsSync(record)
            ? readFileSync(record, 'utf8')
                .split('\n')
                .filter((line) => line.includes('"run-start"')).length
            : 0;
        await waitUntil('every slot spins', () => starts() === n, DEADLINE_MS);
        // The runner processes busy-loop in blocking code: only killing them stops the runs.
        // Each runner is started on its slot's first use, just after run-start is recorded.
        await waitUntil(
          'one runner process a slot',
          () => childrenOf(voxd.child.pid!).length === n,
          DEADLINE_MS,
        );
        const runners = childrenOf(voxd.child.pid!);

        voxd.child.kill('SIGTERM');
        for (const res of await withDeadline(Promise.all(spinning), 'the spinning requests', DEADLINE_MS)) {
          assert.equal(res.status, 503, JSON.stringify(res.json));
          assert.match((res.json as { error: { message: string } }).error.message, /shutdown_timeout_ms=300/);
        }
        // Bounded: the process ends on its own, through its drain, not through the fallback exit
        // that abandons work still running.
        exit = await voxd.exit();
        assert.doesNotMatch(voxd.stderr, /abandoned/);
        for (const pid of runners) assert.equal(alive(pid), false, `runner ${pid} outlived voxd`);
      } finally {
        exit ??= await voxd.stop();
      }
      assert.deepEqual(exit, { code: 0, signal: null });
    });
  }

  test('SIGTERM sent the moment the listening line appears still shuts down cleanly', async () => {
    // The line is a readiness signal; the SIGTERM handler must already be installed when it is printed.
    // The race is timing-dependent, so try it many times, two children at once to add contention.
    const config = configs.write(validConfig());
    const once = async (attempt: number) => {
      const voxd = new VoxdProcess(['serve', '--config', config]);
      let exit: Exit | undefined;
      try {
        await voxd.listening();
      } finally {
        exit = await voxd.stop();
      }
      assert.deepEqual(exit, { code: 0, signal: null }, `attempt ${attempt}: ${voxd.stderr}`);
    };
    for (let round = 0; round < 10; round++) {
      await Promise.all([once(2 * round + 1), once(2 * round + 2)]);
    }
  });
});
