/**
 * One test server for a whole `describe` block: `suiteServer` registers the block's `before` hook
 * that starts it and the `after` hook that closes it, and returns the server the tests use.
 */
import { after, before } from 'node:test';
import { startServer, type TestServer, type TestServerOptions } from './voxd.js';

type Config = Record<string, unknown>;

/**
 * Starts a server with `config` (a function when the config is only known once earlier `before`
 * hooks ran, e.g. a folder they made) in a `before` hook of the enclosing `describe` block and
 * closes it in its `after` hook. Hooks run in the order they are registered, so hooks registered
 * before this call run before the start and before the close, and those registered after it run
 * after both. The returned object stands for the started server (using it before the start
 * throws); closing it in a test is allowed, and the after hook then only waits for that close.
 */
export function suiteServer(config: Config | (() => Config), options: TestServerOptions = {}): TestServer {
  let server: TestServer | undefined;
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
    server = await startServer(typeof config === 'function' ? config() : config, options);
  });
  after(async () => {
    if (server) await close();
  });
  return {
    get voxd() {
      return started().voxd;
    },
    get url() {
      return started().url;
    },
    get dir() {
      return started().dir;
    },
    get fixture() {
      return started().fixture;
    },
    get logs() {
      return started().logs;
    },
    get records() {
      return started().records;
    },
    gate: (name) => started().gate(name),
    close,
  };
}

/**
 * `suiteServer` for the tests of embedded engines: these `models` (and any other `config`), with
 * requests waiting on a busy model as long as it takes (busy_timeout_ms 0, no limit) instead of
 * failing once a slow engine has run for the default ceiling.
 */
export function engineSuiteServer(models: unknown[], config: Config = {}, options: TestServerOptions = {}) {
  return suiteServer({ busy_timeout_ms: 0, ...config, models }, options);
}
