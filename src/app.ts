/**
 * The composition root: a runtime and an HTTP server for one validated config. The CLI and the
 * tests both start voxd through `startVoxd`, so tests exercise the same wiring users run.
 */
import type { Server } from 'node:http';
import type { AddressInfo, Server as TcpServer } from 'node:net';
import { Codec, probeFfmpeg } from './audio/ffmpeg.js';
import { isLoopbackHost } from './config/api-keys.js';
import { ConfigError } from './config/errors.js';
import { FIXTURE_FAMILY, FIXTURE_OFF } from './config/model-config.js';
import type { ServerConfig } from './config/types.js';
import { createEngineCatalog, type EngineCatalog } from './engines/catalog.js';
import { httpFrontEnds } from './http/index.js';
import { Installer } from './models/installer.js';
import { ModelsRoot } from './models/models-root.js';
import { createLogger, type Logger } from './observability/logger.js';
import { Metrics } from './observability/metrics.js';
import { Runtime } from './runtime/runtime.js';
import { CUT_GRACE_MS } from './runtime/shutdown-timing.js';
import type { FrontEnd } from './session/front-end.js';
import { type SessionHost, sessionHost } from './session/session-host.js';
import { type Clock, systemClock } from './util/clock.js';
import type { MemoryRelease } from './util/release-memory.js';
import { VERSION } from './version.js';
import { createWyomingListener, type WyomingListener } from './wyoming/listener.js';
import { type Announcement, announceWyoming } from './wyoming/zeroconf.js';

export interface StartOptions {
  config: ServerConfig;
  catalog?: EngineCatalog;
  /** Builds the installer of a models root (tests replace it to make one fail). */
  installerFor?: (root: string) => Promise<Installer>;
  clock?: Clock;
  freeMemoryMb?: () => Promise<number>;
  /** When to give memory back after serving; by default the process's own (util/release-memory.ts). */
  memory?: MemoryRelease;
  /** The log; by default JSON lines on stderr at the config's log_level. */
  logger?: Logger;
}

export interface Voxd {
  runtime: Runtime;
  metrics: Metrics;
  /** ffmpeg as found at startup (what formats the server can serve). */
  codec: Codec;
  server: Server;
  /** `http://host:port` (or `https://`) actually bound (port 0 picks a free one). */
  url: string;
  /** The Wyoming listener's bound host and port, when `wyoming_port` turned it on. */
  wyoming: { host: string; port: number } | undefined;
  /**
   * Shuts down: stops accepting, refuses queued work (503), lets running requests finish within
   * `shutdown_timeout_ms`, then cancels them and cuts every connection, and unloads every model.
   * A second call joins the first.
   */
  close(): Promise<void>;
  /** Cancels running requests and cuts every connection now (a second signal). */
  abandon(why: string): void;
}

type InstallerSettingKey = 'max_download_bytes' | 'max_package_bytes' | 'installer_allow_private_hosts';

/** The installer's bounds from the config (`voxd serve` and `voxd models` share them). */
export const installerSettings = (config: Pick<ServerConfig, InstallerSettingKey>) => ({
  maxDownloadBytes: config.max_download_bytes,
  maxPackageBytes: config.max_package_bytes,
  allowPrivateHosts: config.installer_allow_private_hosts,
});

/**
 * The config's models root, made when missing, with its installer; a root that cannot be made is
 * a config error naming models_root. `voxd serve` and the one-shot commands share it.
 */
export async function openModelsRoot(
  config: Pick<ServerConfig, 'models_root' | 'default_models_root' | InstallerSettingKey>,
  catalog: EngineCatalog,
  build: (root: string) => Promise<Installer> = async (root) =>
    new Installer({ root, engines: catalog, ...installerSettings(config) }),
): Promise<ModelsRoot<Installer>> {
  try {
    return await ModelsRoot.open(config.models_root, config.default_models_root, build);
  } catch (err) {
    throw ConfigError.rejected(
      'models_root',
      config.models_root,
      (err as Error).message.replace(/^path: /, ''),
    );
  }
}

/**
 * The checks that refuse to start rather than serve unsafely: no keys on a host others can reach
 * (unless --insecure), and the fixture test engine, whose request options can hang, spin or crash
 * a runner, unless enabled.
 */
export function checkStartup(config: ServerConfig): void {
  if (config.api_keys.length === 0 && !config.insecure && !isLoopbackHost(config.host)) {
    throw new ConfigError(
      'host',
      config.host,
      `host: ${config.host} is reachable from other machines and no API key is set; set api_keys, --api-keys-file or VOXD_API_KEYS, or pass --insecure to serve without keys`,
    );
  }
  if (config.wyoming_port !== undefined && !config.insecure && !isLoopbackHost(config.wyoming_host)) {
    throw new ConfigError(
      'wyoming_host',
      config.wyoming_host,
      `wyoming_host: ${config.wyoming_host} is reachable from other machines and Wyoming has no authentication; listen on loopback, or pass --insecure to serve Wyoming to the network`,
    );
  }
  if (config.enable_fixture) return;
  const index = config.models.findIndex((model) => model.family === FIXTURE_FAMILY);
  if (index >= 0)
    throw new ConfigError(
      `models[${index}].family`,
      FIXTURE_FAMILY,
      `models[${index}].family: ${FIXTURE_OFF}`,
    );
}

export async function startVoxd(options: StartOptions): Promise<Voxd> {
  const clock = options.clock ?? systemClock;
  const { config } = options;
  checkStartup(config);
  const logger = options.logger ?? createLogger({ level: config.log_level }).logger;
  const { runtime, metrics, modelsRoot } = await startRuntime(options, clock, logger);
  const codec = openCodec(await probeFfmpeg(config.ffmpeg_path), config);
  // One byte budget, one connection count and one memory release for every front end.
  const shared = sessionHost(config, clock, options.memory, metrics);
  const { http, realtime, deepgram, bridge } = httpFrontEnds(runtime, config, {
    logger,
    metrics,
    logRequests: config.log,
    codec,
    host: shared,
  });
  const { server } = http;
  await listen(server, config.port, config.host);
  const wyoming = await startWyoming(runtime, config, logger, shared, metrics, codec, server);
  // Once listening, the server emits 'error' when accept() fails (out of memory or socket buffers;
  // out of file descriptors once libuv's reserve descriptor is used up). Unheard it would end the
  // process; the connection is lost, the server keeps listening.
  server.on('error', (err) => logger.warn({ err }, 'server: accept failed'));
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `${config.tls ? 'https' : 'http'}://${host}:${address.port}`;
  logger.info({ url, version: VERSION }, 'started');
  // Drained together, in this order, and cut together at a shutdown's deadline.
  const frontEnds: FrontEnd[] = [http, realtime, deepgram, bridge, wyoming?.listener].filter(
    (f) => f !== undefined,
  );
  const stopping: Stopping = { runtime, codec, modelsRoot, config, clock, logger, frontEnds, wyoming };
  let closing: Promise<void> | undefined;
  return {
    runtime,
    metrics,
    codec,
    server,
    url,
    wyoming: wyoming?.address,
    close() {
      closing ??= shutDown(stopping);
      return closing;
    },
    abandon(why) {
      runtime.cancelRunning(why);
      clock.after(CUT_GRACE_MS, () => cutAll(frontEnds), { unref: true });
    },
  };
}

/** The runtime over the config's engines and models root, started, with the metrics that read it. */
async function startRuntime(options: StartOptions, clock: Clock, logger: Logger) {
  const { config } = options;
  const allFamilies = options.catalog ?? createEngineCatalog();
  // Without the flag the runtime cannot build the fixture at all, whatever names it (a package too).
  const catalog = config.enable_fixture
    ? allFamilies
    : new Map([...allFamilies].filter(([name]) => name !== FIXTURE_FAMILY));
  const modelsRoot = await openModelsRoot(config, catalog, options.installerFor);
  // The runtime is made below; the gauges read it only when scraped, by then it exists.
  let runtimeRef: Runtime | undefined;
  const metrics = new Metrics(VERSION, () => runtimeRef?.snapshots() ?? []);
  const runtime = new Runtime(config, {
    catalog,
    modelsRoot,
    clock,
    freeMemoryMb: options.freeMemoryMb,
    metrics,
    logger,
  });
  runtimeRef = runtime;
  await runtime.start();
  return { runtime, metrics, modelsRoot };
}

function openCodec(ffmpeg: Awaited<ReturnType<typeof probeFfmpeg>>, config: ServerConfig): Codec {
  return new Codec(ffmpeg, {
    timeoutMs: config.ffmpeg_timeout_ms,
    stallMs: config.ffmpeg_decode_stall_ms,
    // A compressed speech answer's first byte need not wait for ffmpeg to start (ffmpeg-spares.ts).
    spares: { max: 4, idleMs: 60_000 },
  });
}

interface WyomingStarted {
  listener: WyomingListener;
  address: { host: string; port: number };
  announcement: Announcement | undefined;
}

/**
 * The Wyoming listener when `wyoming_port` asks for one, listening, and announced when
 * `wyoming_zeroconf` says so. A port in use ends the start: the HTTP server closes and the runtime
 * stops, so nothing is left listening.
 */
async function startWyoming(
  runtime: Runtime,
  config: ServerConfig,
  logger: Logger,
  shared: SessionHost,
  metrics: Metrics,
  codec: Codec,
  httpServer: Server,
): Promise<WyomingStarted | undefined> {
  if (config.wyoming_port === undefined) return undefined;
  const listener = createWyomingListener(runtime, config, logger, shared, { metrics, codec });
  try {
    await listen(listener.server, config.wyoming_port, config.wyoming_host);
  } catch (err) {
    httpServer.close();
    await runtime.close(0);
    throw err;
  }
  const bound = listener.server.address() as AddressInfo;
  logger.info({ host: bound.address, port: bound.port }, 'wyoming listening');
  let announcement: Announcement | undefined;
  if (config.wyoming_zeroconf !== undefined) {
    if (isLoopbackHost(config.wyoming_host))
      logger.warn(
        `wyoming zeroconf: the listener is on ${config.wyoming_host}, which other machines cannot reach`,
      );
    announcement = announceWyoming(config.wyoming_zeroconf, bound.port, logger);
  }
  return { listener, address: { host: bound.address, port: bound.port }, announcement };
}

/** What a shutdown stops. */
interface Stopping {
  runtime: Runtime;
  codec: Codec;
  modelsRoot: ModelsRoot<Installer>;
  config: ServerConfig;
  clock: Clock;
  logger: Logger;
  frontEnds: readonly FrontEnd[];
  wyoming: WyomingStarted | undefined;
}

/** Drops every connection of every front end now. */
function cutAll(frontEnds: readonly FrontEnd[]): void {
  for (const frontEnd of frontEnds) frontEnd.cut();
}

/**
 * The shutdown: the runtime first (from here on readiness says not-ready and queued work is
 * refused), downloads stop, every front end drains; at the deadline every connection is cut.
 */
async function shutDown(s: Stopping): Promise<void> {
  const { runtime, config, frontEnds } = s;
  const runtimeClosed = runtime.close(config.shutdown_timeout_ms);
  s.codec.close();
  // Downloads stop at once; their partial files stay for a later resume.
  const installsStopped = s.modelsRoot.installer.stopAll();
  const deadline = config.shutdown_timeout_ms;
  // Cancelled requests get a moment to answer their 503 before every connection is cut.
  const cutTimer = deadline > 0 ? s.clock.after(deadline + CUT_GRACE_MS, () => cutAll(frontEnds)) : undefined;
  s.logger.info('shutting down');
  try {
    await Promise.all([
      ...frontEnds.map((frontEnd) => frontEnd.drain()),
      s.wyoming?.announcement?.stop(),
      runtimeClosed,
      installsStopped,
    ]);
  } finally {
    cutTimer?.cancel();
  }
  s.logger.info('stopped');
}

/** Listens on `port` and `host`; a failure to bind (a port in use) rejects. */
function listen(server: Server | TcpServer, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
