/**
 * A model's entry in GET /v1/models and in the UI's status stream, built from the runtime's
 * snapshot. The key order is part of the wire format (clients and tests compare the JSON text).
 */
import type { ModelIsolation } from '../config/types.js';
import type { ModelSnapshot } from '../runtime/model-snapshot.js';
import type { Runtime } from '../runtime/runtime.js';

const MIB = 1024 * 1024;

export interface ModelStatus {
  id: string;
  family: string;
  task: string;
  mode: string;
  path: string;
  loaded: boolean;
  state: string;
  /** Why the model was last unloaded by a fault (its engine crashed); gone once it loads again. */
  last_error?: string;
  slots?: number;
  active_slots?: number;
  queued_requests?: number;
  max_parallel_slots?: number | null;
  /** How the slots share the engine: "model" (one shared runner and weights) or "session". */
  isolation: ModelIsolation;
  /** The memory the last load was estimated to take, in MiB (weights once per copy, plus runners); null before a load or when unknown. */
  memory_estimate_mb: number | null;
  session_options: Record<string, string>;
}

/**
 * One model's status. The serial runtime (one slot per model, `slots` refused) shows no slot
 * fields: they would only ever read 1 and 0.
 */
export function modelStatus(s: ModelSnapshot, parallel: boolean): ModelStatus {
  const slotFields = parallel
    ? {
        slots: s.slots,
        active_slots: s.activeSlots,
        queued_requests: s.queuedRequests,
        max_parallel_slots: s.poolSize,
      }
    : {};
  return {
    id: s.id,
    family: s.family,
    task: s.task,
    mode: s.mode,
    ...slotFields,
    loaded: s.loaded,
    path: s.path,
    state: s.state,
    ...(s.lastError ? { last_error: s.lastError } : {}),
    isolation: s.isolation,
    memory_estimate_mb: s.memoryEstimateBytes === null ? null : Math.ceil(s.memoryEstimateBytes / MIB),
    session_options: s.sessionOptions,
  };
}

/** The `data` of GET /v1/models (also sent by the UI's status stream). */
export function modelList(
  runtime: Runtime,
  options: { sessionOptions: boolean; params: boolean },
): Record<string, unknown>[] {
  return runtime.snapshots().map((snapshot) => {
    const { session_options, ...status } = modelStatus(snapshot, runtime.parallel);
    const { id, ...rest } = status;
    const entry: Record<string, unknown> = { id, object: 'model', owned_by: 'engine', ...rest };
    if (options.sessionOptions) entry['session_options'] = session_options;
    if (options.params) entry['params'] = runtime.get(status.id).family.params;
    return entry;
  });
}
