// What the benchmark scripts share: an in-process voxd with --parallel-jobs for a list of models,
// its config written to a folder of the caller's, and the sentence the engines are measured on.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startVoxd } from '../dist/src/app.js';
import { loadServerConfig } from '../dist/src/config/server-config.js';
import { createEngineCatalog } from '../dist/src/engines/catalog.js';
import { createLogger } from '../dist/src/observability/logger.js';

export const SENTENCE =
  'The quick brown fox jumps over the lazy dog while seven happy children watch from the old wooden bridge today.';

/** Starts voxd (parallel runtime, no busy timeout) serving `models`; its config goes into `dir`. */
export async function startBenchServer(dir, models) {
  const path = join(dir, `server-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(path, JSON.stringify({ ui: false, busy_timeout_ms: 0, models }));
  const catalog = createEngineCatalog();
  const { config } = loadServerConfig({
    configPath: path,
    overrides: { port: 0, parallel_jobs: true, enable_fixture: true },
    knownFamilies: [...catalog.keys()],
  });
  return startVoxd({ config, catalog, logger: createLogger({ level: 'silent' }).logger });
}
