/**
 * One test server for a whole `describe` block: `suiteServer` registers the block's `before` hook
 * that starts it and the `after` hook that closes it, and returns the server the tests use.
 */
import { rmSync } from 'node:fs';
import { after, before } from 'node:test';
import { startServer, type TestServer, type TestServerOptions, tempDir } from './voxd.js';

type Config = Record<string, unknown>;

export interface SuiteServerOptions extends TestServerOptions {
  /**
   * Makes a scratch folder with this name prefix before the server starts (the config function
   * gets its path, e.g. to put model folders in) and removes it after the server has closed.
   */
  scratch?: string;
}

/**
 * Starts a server with `config` (a function when the config is only known once earlier `before`
 * hooks ran, or is built in the scratch folder) in a `before` hook of the enclosing `describe`
 * block and closes it in its `after` hook. Hooks run in the order they are registered, so hooks
 * registered before this call run before the start and before the close, and those registered
 * after it run after both. The returned object stands for the started server (using it before
 * the start throws); closing it in a test is allowed, and the after hook then only waits for that
 * close.
 */
export function suiteServer(
  config: Config | ((scratch: string) => Config),
  options: SuiteServerOptions = {},
): TestServer {
  const { scratch: prefix, ...startOptions } = options;
  let server: TestServer | undefined;
  let scratch: string | undefined;
  let closing: Promise<void> | undefined;
  const started = (): TestServer => {
    if (!server) throw new Error('the suite server is used before its before hook started it');
    return server;
  };
  // A test may close the server itself; the after hook then waits for that close, not another.
  const close = (): Promise<void> => {
    closing ??= started().close();
    return closing;
  };
  before(async () => {
    if (prefix !== undefined) scratch = tempDir(prefix);
    server = await startServer(typeof config === 'function' ? config(scratch ?? '') : config, startOptions);
  });
  after(async () => {
    try {
      if (server) await close();
    } finally {
      if (scratch) rmSync(scratch, { recursive: true, force: true });
    }
  });
  // Every other property is read from the started server when a test reads it.
  return new Proxy({} as TestServer, {
    get: (_, key) => (key === 'close' ? close : Reflect.get(started(), key)),
  });
}

/**
 * `suiteServer` for the tests of embedded engines: a server with these `models` only (a function
 * of the scratch folder when `options.scratch` is given), where requests wait on a busy model as
 * long as it takes (busy_timeout_ms 0, no limit) instead of failing once a slow engine has run for
 * the default ceiling.
 */
export function engineSuiteServer(
  models: unknown[] | ((scratch: string) => unknown[]),
  options: SuiteServerOptions = {},
): TestServer {
  return suiteServer(
    (scratch) => ({ busy_timeout_ms: 0, models: typeof models === 'function' ? models(scratch) : models }),
    options,
  );
}
