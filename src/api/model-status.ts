/**
 * A model's entry in GET /v1/models and in the UI's status stream, built from the runtime's
 * snapshot. The key order is part of the wire format (clients and tests compare the JSON text).
 */
import { aliasesOf, aliasTarget } from '../config/model-aliases.js';
import type { ModelIsolation } from '../config/types.js';
import { type ModelSnapshot, snapshotOf } from '../runtime/model-snapshot.js';
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

export interface ListOptions {
  sessionOptions: boolean;
  params: boolean;
}

/**
 * One model as GET /v1/models lists it: OpenAI's model object (id, object, created, owned_by),
 * then audio.cpp's and voxd's fields, then the names model_aliases gives it.
 */
function modelObject(
  runtime: Runtime,
  snapshot: ModelSnapshot,
  options: ListOptions,
): Record<string, unknown> {
  const { session_options, ...status } = modelStatus(snapshot, runtime.parallel);
  const { id, ...rest } = status;
  const model = runtime.get(id);
  const entry: Record<string, unknown> = {
    id,
    object: 'model',
    created: model.created,
    owned_by: 'engine',
    ...rest,
    aliases: aliasesOf(runtime.config.model_aliases, id).filter((name) => !runtime.has(name)),
  };
  if (options.sessionOptions) entry['session_options'] = session_options;
  if (options.params) entry['params'] = model.family.params;
  return entry;
}

/** The `data` of GET /v1/models without its alias entries (also sent by the UI's status stream). */
export function modelList(runtime: Runtime, options: ListOptions): Record<string, unknown>[] {
  return runtime.snapshots().map((snapshot) => modelObject(runtime, snapshot, options));
}

/**
 * An alias as a model of its own, for clients that list the models and pick the name they know
 * (`whisper-1`): its model's entry under the alias's id, with `alias_of` naming the model.
 */
function aliasObject(name: string, model: Record<string, unknown>): Record<string, unknown> {
  const { id, object, created, owned_by, aliases: _own, ...rest } = model;
  return { id: name, object, created, owned_by, alias_of: id, ...rest, aliases: [] };
}

/** GET /v1/models' `data`: every model, then every alias of a registered model. */
export function modelsWithAliases(runtime: Runtime, options: ListOptions): Record<string, unknown>[] {
  const models = modelList(runtime, options);
  const aliases = models.flatMap((model) =>
    (model['aliases'] as string[]).map((name) => aliasObject(name, model)),
  );
  return [...models, ...aliases];
}

/** GET /v1/models/{id}: the model of that id, or of that alias; undefined when there is none. */
export function modelById(
  runtime: Runtime,
  name: string,
  options: ListOptions,
): Record<string, unknown> | undefined {
  if (runtime.has(name)) return modelObject(runtime, snapshotOf(runtime.get(name)), options);
  const target = aliasTarget(runtime.config.model_aliases, name);
  if (target === undefined || !runtime.has(target)) return undefined;
  return aliasObject(name, modelObject(runtime, snapshotOf(runtime.get(target)), options));
}
