/**
 * What a model is doing now, as plain data: the source of GET /v1/models and the UI's status
 * stream (src/api/model-status.ts turns it into their JSON) and of the per-model metrics.
 */
import type { ModelIsolation } from '../config/types.js';
import type { ModelSample } from '../observability/metrics.js';
import { isolationOf, type ModelEntry } from './model-entry.js';

/** What the metrics sample (id, loaded, slots, activity, memory, runners), and the rest of the status. */
export interface ModelSnapshot extends ModelSample {
  family: string;
  task: string;
  mode: string;
  path: string;
  /** The manager's activity while it holds the model (registering, ...), else the model's state. */
  state: string;
  /** Why the model was last unloaded by a fault (its engine crashed); gone once it loads again. */
  lastError: string | undefined;
  /** Sessions in the published pool; null while none is published. */
  poolSize: number | null;
  /** How the slots share the engine: "model" (one shared runner and weights) or "session". */
  isolation: ModelIsolation;
  /** The memory the last load was estimated to take (weights once per copy, plus runners); null before a load or when unknown. */
  memoryEstimateBytes: number | null;
  runnerProcessIds: number[];
  sessionOptions: Record<string, string>;
}

export function snapshotOf(entry: ModelEntry): ModelSnapshot {
  const c = entry.config;
  const scheduler = entry.scheduler.snapshot();
  return {
    id: c.id,
    family: c.family,
    task: c.task,
    mode: c.mode,
    path: c.path,
    loaded: entry.loaded,
    state: entry.activity ?? entry.state.kind,
    lastError: entry.lastError,
    slots: c.slots ?? 1,
    activeSlots: scheduler.activeRequests,
    queuedRequests: scheduler.queuedRequests,
    poolSize: entry.poolSize,
    isolation: isolationOf(c, entry.family),
    memoryEstimateBytes: entry.footprint ?? null,
    runnerProcessIds: entry.runnerProcessIds(),
    sessionOptions: c.session_options,
  };
}
