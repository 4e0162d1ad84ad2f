import type { LiveIngestConfig } from './types.js';

/**
 * The server's live_ingest with the model's overrides on top (an undefined override is ignored).
 * Every front end that takes audio as it is spoken (chunked HTTP, realtime, Wyoming) bounds its
 * turns with these.
 */
export function liveIngestLimits(
  server: LiveIngestConfig,
  model?: Partial<LiveIngestConfig>,
): LiveIngestConfig {
  const out = { ...server };
  if (model) {
    for (const key of Object.keys(out) as (keyof LiveIngestConfig)[]) {
      const value = model[key];
      if (value !== undefined) out[key] = value;
    }
  }
  return out;
}
