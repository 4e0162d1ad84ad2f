/** Starts real voxd servers on loopback for tests, with gates, a manual clock and HTTP helpers. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type StartOptions, startVoxd, type Voxd } from '../../src/app.js';
import { type CliOverrides, loadServerConfig } from '../../src/config/server-config.js';
import { createEngineCatalog } from '../../src/engines/catalog.js';
import type { FixtureFamily } from '../../src/engines/fixture/fixture-family.js';
import { ERROR_CODES } from '../../src/errors.js';
import { createLogger, type Logger } from '../../src/observability/logger.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import type { Clock } from '../../src/util/clock.js';

export { ManualClock } from './manual-clock.js';

export interface Gate {
  path: string;
  open(): Promise<void>;
}

export interface TestServer {
  voxd: Voxd;
  url: string;
  dir: string;
  fixture: FixtureFamily;
  /** Each log line's message, an error's stack after it (`msg: stack`), as people read them. */
  logs: string[];
  /** Each log line as the JSON object written. */
  records: LogRecord[];
  gate(name: string): Gate;
  close(): Promise<void>;
}

export interface LogRecord {
  level: string;
  msg: string;
  time: string;
  req_id?: string;
  err?: { stack?: string; message?: string };
  [key: string]: unknown;
}

/** A logger that writes nothing. */
export function quietLogger(): Logger {
  return createLogger({ level: 'silent' }).logger;
}

/** A logger whose lines are parsed into `records`, with their messages in `logs`. */
export function capturingLogger(level: string, logs: string[], records: LogRecord[]): Logger {
  const sink = {
    write(line: string) {
      const record = JSON.parse(line) as LogRecord;
      records.push(record);
      logs.push(record.err?.stack ? `${record.msg}: ${record.err.stack}` : record.msg);
    },
  };
  return createLogger({ level: level as 'info', sink }).logger;
}

export interface TestServerOptions {
  parallel?: boolean;
  clock?: Clock;
  freeMemoryMb?: () => Promise<number>;
  /** CLI-flag overrides, as `voxd serve` flags would give them. */
  overrides?: CliOverrides;
  /** Builds a models root's installer (a test makes it fail for one root). */
  installerFor?: StartOptions['installerFor'];
  memory?: StartOptions['memory'];
}

export function tempDir(prefix = 'voxd-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** A fixture model entry with the given id and extra keys. */
export function fixtureModel(id: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { id, family: 'fixture', path: '.', task: 'asr', ...extra };
}

export async function startServer(
  raw: Record<string, unknown>,
  options: TestServerOptions = {},
): Promise<TestServer> {
  const dir = tempDir();
  const configPath = join(dir, 'server.json');
  const catalog = createEngineCatalog();
  const logs: string[] = [];
  const records: LogRecord[] = [];
  let voxd: Voxd;
  // A config refused or a server that does not start (what some tests expect) leaves no folder.
  try {
    writeFileSync(configPath, JSON.stringify({ ui: false, ...raw }));
    const { config } = loadServerConfig({
      configPath,
      overrides: {
        port: 0,
        host: '127.0.0.1',
        parallel_jobs: options.parallel ?? false,
        models_root: join(dir, 'models'),
        enable_fixture: true,
        ...options.overrides,
      },
      knownFamilies: [...catalog.keys()],
    });
    voxd = await startVoxd({
      config,
      catalog,
      clock: options.clock,
      freeMemoryMb: options.freeMemoryMb,
      installerFor: options.installerFor,
      memory: options.memory,
      logger: capturingLogger(config.log_level, logs, records),
    });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const gates: Gate[] = [];
  return {
    voxd,
    url: voxd.url,
    dir,
    fixture: catalog.get('fixture') as FixtureFamily,
    logs,
    records,
    gate: (name) => {
      const path = join(dir, `gate-${name}`);
      const gate = { path, open: () => writeFile(path, '') };
      gates.push(gate);
      return gate;
    },
    close: async () => {
      // Open every gate first, so a failed test can not leave work that never finishes.
      await Promise.all(gates.map((gate) => gate.open()));
      await voxd.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Runs `body` with `server` once it has started and closes the server however the body ends. When
 * the body fails and the close fails too, the body's error is the one thrown: it says why the test
 * failed, while the close's failure is most often a consequence of it.
 */
export function closeAfter<S extends { close(): Promise<void> }, T>(
  server: Promise<S>,
  body: (server: S) => Promise<T>,
): Promise<T> {
  return server.then((s) => runThenClose(s, body, () => s.close()));
}

async function runThenClose<S, T>(s: S, body: (s: S) => Promise<T>, close: () => Promise<void>): Promise<T> {
  let result: T;
  try {
    result = await body(s);
  } catch (err) {
    await close().catch(() => {});
    throw err;
  }
  await close();
  return result;
}

/** Options of `withServer`: those of `startServer`, and what must happen before the close. */
export interface WithServerOptions extends TestServerOptions {
  /**
   * Called in order after the body, also when it failed, before the server closes: they release
   * what would hold the close (a gate the test made itself, a request to abort).
   */
  beforeClose?: (() => unknown)[];
}

/** Starts a server as `startServer` does, runs `body` with it and always closes it (see `closeAfter`). */
export function withServer<T>(raw: Record<string, unknown>, body: (s: TestServer) => Promise<T>): Promise<T>;
export function withServer<T>(
  raw: Record<string, unknown>,
  options: WithServerOptions,
  body: (s: TestServer) => Promise<T>,
): Promise<T>;
export async function withServer<T>(
  raw: Record<string, unknown>,
  ...rest: [(s: TestServer) => Promise<T>] | [WithServerOptions, (s: TestServer) => Promise<T>]
): Promise<T> {
  const [options, body] = rest.length === 1 ? [{}, rest[0]] : rest;
  const { beforeClose = [], ...startOptions } = options;
  const s = await startServer(raw, startOptions);
  return runThenClose(s, body, async () => {
    try {
      for (const release of beforeClose) await release();
    } finally {
      await s.close();
    }
  });
}

export interface HttpResult {
  status: number;
  headers: Headers;
  body: Buffer;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON shapes
  json: any;
}

async function toResult(res: Response): Promise<HttpResult> {
  const body = Buffer.from(await res.arrayBuffer());
  let json: unknown;
  if ((res.headers.get('content-type') ?? '').includes('application/json'))
    json = JSON.parse(body.toString('utf8'));
  return { status: res.status, headers: res.headers, body, json };
}

export async function request(
  base: string,
  method: string,
  path: string,
  init: { body?: string | Buffer | FormData; headers?: Record<string, string>; signal?: AbortSignal } = {},
): Promise<HttpResult> {
  const result = await toResult(await fetch(`${base}${path}`, { method, ...init }));
  if (OPENAPI_CHECK) await checkOpenApi(method, path, result, init);
  return result;
}

/**
 * `VOXD_OPENAPI_CHECK=1` checks every response these helpers receive against the OpenAPI document
 * (test/helpers/openapi.ts), so the whole suite's real responses test it. `npm test` sets it
 * (scripts/run-tests.mjs); a test file run alone with `node --test` skips it unless asked.
 */
const OPENAPI_CHECK = process.env['VOXD_OPENAPI_CHECK'] === '1';
const openApiChecks = { checked: 0, failures: [] as string[] };
if (OPENAPI_CHECK)
  process.on('exit', () => {
    process.stderr.write(
      `openapi check: ${openApiChecks.checked} exchanges checked (responses, and the requests that succeeded), ${openApiChecks.failures.length} failed\n`,
    );
    for (const failure of openApiChecks.failures) process.stderr.write(`  ${failure}\n`);
  });

// Loaded with this module (ajv and the document take about half a second), so the cost falls
// before the tests rather than inside a test that times its requests; a run without the check never
// loads ajv.
const openApi = OPENAPI_CHECK ? await import('./openapi.js') : undefined;
openApi?.compileAllResponseSchemas();

async function checkOpenApi(
  method: string,
  path: string,
  result: HttpResult,
  sent: { body?: string | Buffer | FormData; headers?: Record<string, string> },
): Promise<void> {
  if (!openApi) return;
  openApiChecks.checked++;
  try {
    openApi.assertMatchesOpenApi(method, path, result.status, result.headers, result.body);
    // A request the server accepted must be one the document allows (a refused one may be anything).
    if (result.status >= 200 && result.status < 300) openApi.assertRequestMatchesOpenApi(method, path, sent);
  } catch (err) {
    openApiChecks.failures.push((err as Error).message);
    throw err;
  }
}

export function get(base: string, path: string, headers?: Record<string, string>): Promise<HttpResult> {
  return request(base, 'GET', path, { headers });
}

export function post(base: string, path: string, body: unknown, signal?: AbortSignal): Promise<HttpResult> {
  return request(base, 'POST', path, {
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
    signal,
  });
}

/** The flite model `model` speaking `input` in voice slt, as raw PCM16 at `sampleRate`: speech for the VAD and ASR tests. */
export async function fliteSpeech(
  base: string,
  input: string,
  sampleRate: number,
  model = 'flite',
): Promise<Buffer> {
  const res = await post(base, '/v1/audio/speech', {
    model,
    input,
    voice: 'slt',
    response_format: 'pcm',
    sample_rate: sampleRate,
  });
  if (res.status !== 200) throw new Error(`flite: ${res.status} ${res.body.toString('utf8')}`);
  return res.body;
}

/** An OpenAI-style multipart transcription of `wav` (extra form fields such as `language`). */
export function transcribe(
  base: string,
  model: string,
  wav: Buffer,
  fields: Record<string, string> = {},
): Promise<HttpResult> {
  const form = new FormData();
  form.set('model', model);
  form.set('file', new Blob([wav]), 'a.wav');
  for (const [key, value] of Object.entries(fields)) form.set(key, value);
  return request(base, 'POST', '/v1/audio/transcriptions', { body: form });
}

/** Asserts the audio.cpp error shape and returns the message. */
export function errorOf(result: HttpResult, status: number, type: string): string {
  if (
    result.status !== status ||
    result.json?.error?.type !== type ||
    typeof result.json?.error?.message !== 'string'
  ) {
    throw new Error(`expected ${status} ${type}, got ${result.status} ${result.body.toString('utf8')}`);
  }
  assertErrorShape(result.json.error, status);
  return result.json.error.message as string;
}

/**
 * The OpenAI error object: exactly message, type, param (a field or null) and code (the wire code
 * of a catalogue entry with this status and type).
 */
export function assertErrorShape(error: Record<string, unknown>, status?: number): void {
  assert.deepEqual(Object.keys(error).sort(), ['code', 'message', 'param', 'type'], JSON.stringify(error));
  assert.ok(error['param'] === null || typeof error['param'] === 'string', JSON.stringify(error));
  const entry = Object.values(ERROR_CODES).find((e) => e.apiCode === error['code']);
  assert.ok(entry, `unknown error code in ${JSON.stringify(error)}`);
  assert.equal(entry.type, error['type'], JSON.stringify(error));
  if (status !== undefined) assert.equal(entry.status, status, JSON.stringify(error));
}

/** Asserts a 400 invalid_request_error whose message names every part. */
export function badRequest(res: HttpResult, ...parts: string[]): string {
  const message = errorOf(res, 400, 'invalid_request_error');
  for (const part of parts) assert.ok(message.includes(part), `"${part}" not in: ${message}`);
  return message;
}

/** A text request to `model` on POST /v1/tasks/run; `options` go to the engine. */
export function runTask(
  server: { url: string },
  model: string,
  options: Record<string, string> = {},
  signal?: AbortSignal,
): Promise<HttpResult> {
  return post(server.url, '/v1/tasks/run', { model, request: { text: 'x', options } }, signal);
}

/** The fixture's JSON report of a non-speech request (which session and configuration served it). */
// biome-ignore lint/suspicious/noExplicitAny: the report is arbitrary JSON
export function reportOf(result: HttpResult): any {
  if (result.status !== 200)
    throw new Error(`expected 200, got ${result.status} ${result.body.toString('utf8')}`);
  return JSON.parse(result.json.text as string);
}

/** Waits for a condition with a deadline (not a sleep: it returns as soon as the condition holds). */
export async function waitUntil(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 5000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/**
 * Waits until `holds()` is true, checked on every change the runtime reports (a model's state,
 * activity, queue or slots), not by polling; fails naming `what` after `ms`. Use it for conditions
 * over the runtime's own state; `waitUntil` is for what the runtime does not report (files, events
 * of the fixture's record, other processes).
 */
export function whenRuntime(runtime: Runtime, what: string, holds: () => boolean, ms = 5000): Promise<void> {
  const stop = new AbortController();
  return withDeadline(runtime.changes.when(holds, stop.signal), what, ms).finally(() => stop.abort());
}

/** Rejects with a message naming `what` when `promise` has not settled within `ms` (a deadline, never a sleep). */
export function withDeadline<T>(promise: Promise<T>, what: string, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/** Model status entry from GET /v1/models. */
// biome-ignore lint/suspicious/noExplicitAny: arbitrary JSON
export async function modelStatus(base: string, id: string): Promise<any> {
  const { json } = await get(base, '/v1/models');
  return json.data.find((m: { id: string }) => m.id === id);
}
