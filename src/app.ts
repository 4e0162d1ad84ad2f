/**
 * The composition root: a runtime and an HTTP server for one validated config. The CLI and the
 * tests both start voxd through `startVoxd`, so tests exercise the same wiring users run.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ServerConfig } from './config/types.js';
import { createEngineCatalog, type EngineCatalog } from './engines/catalog.js';
import { createHttpServer } from './http/server.js';
import { Runtime } from './runtime/runtime.js';
import type { Clock } from './util/clock.js';

export interface StartOptions {
  config: ServerConfig;
  catalog?: EngineCatalog;
  clock?: Clock;
  freeMemoryMb?: () => Promise<number>;
  log?: (message: string) => void;
}

export interface Voxd {
  runtime: Runtime;
  server: Server;
  /** `http://host:port` actually bound (port 0 picks a free one). */
  url: string;
  /** Stops accepting, waits for requests in flight, unloads every model. A second call joins the first. */
  close(): Promise<void>;
}

export async function startVoxd(options: StartOptions): Promise<Voxd> {
  const { config } = options;
  const log = options.log ?? ((message: string) => process.stderr.write(`[voxd] ${message}\n`));
  const runtime = new Runtime(config, {
    catalog: options.catalog ?? createEngineCatalog(),
    clock: options.clock,
    freeMemoryMb: options.freeMemoryMb,
    log,
  });
  await runtime.start();
  const { server, drain } = createHttpServer(runtime, config, { log, logRequests: config.log });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  let closing: Promise<void> | undefined;
  return {
    runtime,
    server,
    url: `http://${host}:${address.port}`,
    close() {
      closing ??= (async () => {
        await drain();
        await runtime.close();
      })();
      return closing;
    },
  };
}
