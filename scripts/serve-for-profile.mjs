// voxd for a CPU profile: `voxd serve` ends with libc _exit (src/util/hard-exit.ts), which writes no
// --cpu-prof profile, so this starts the same server through startVoxd and exits normally on
// SIGTERM. Used by `scripts/bench-http.mjs --cpu-prof=DIR`.
// Usage: node --cpu-prof scripts/serve-for-profile.mjs <server.json>
import { startVoxd } from '../dist/src/app.js';
import { loadServerConfig } from '../dist/src/config/server-config.js';
import { createEngineCatalog } from '../dist/src/engines/catalog.js';
import { createLogger } from '../dist/src/observability/logger.js';

const catalog = createEngineCatalog();
const { config } = loadServerConfig({
  configPath: process.argv[2],
  overrides: { port: 0, enable_fixture: true },
  knownFamilies: [...catalog.keys()],
});
const voxd = await startVoxd({ config, catalog, logger: createLogger({ level: 'silent' }).logger });
process.on('SIGTERM', async () => {
  await voxd.close();
  process.exit(0);
});
process.stderr.write(`voxd listening on ${voxd.url}\n`);
