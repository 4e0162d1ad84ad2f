/** Which model a request names, and which task tokens and modes each inference route serves. */
import { aliasTarget } from '../config/model-aliases.js';
import type { ModelConfig, TaskToken } from '../config/types.js';
import { invalidField, isVoxdError, showValue, VoxdError } from '../errors.js';
import type { ModelEntry } from '../runtime/model-entry.js';
import type { Runtime } from '../runtime/runtime.js';

/**
 * The model a request names: a registered one at once, or an installed package of that id, which
 * the runtime registers first (Runtime.resolve), or else the model an alias of model_aliases
 * names; 404 otherwise. The routes go on with the entry's own id (`entry.id`): only the request's
 * `model` field speaks in aliases.
 */
export function modelEntry(runtime: Runtime, name: string): ModelEntry | Promise<ModelEntry> {
  if (runtime.has(name)) return runtime.get(name);
  const target = aliasTarget(runtime.config.model_aliases, name);
  return target === undefined ? runtime.resolve(name) : aliasedEntry(runtime, name, target);
}

const notFound = (err: unknown) => isVoxdError(err) && err.code === 'E_MODEL_NOT_FOUND';

async function aliasedEntry(runtime: Runtime, name: string, target: string): Promise<ModelEntry> {
  // A package installed under the alias's name is a model id, and ids win over aliases.
  const own = await runtime.resolve(name).catch((err: unknown) => {
    if (notFound(err)) return undefined;
    throw err;
  });
  if (own) return own;
  try {
    return await runtime.resolve(target);
  } catch (err) {
    if (!notFound(err)) throw err;
    throw missingAliasTarget(name, target, err as VoxdError);
  }
}

/** The 404 of alias `name` whose model `target` is not here: `why` is the target's own 404. */
export function missingAliasTarget(name: string, target: string, why: VoxdError): VoxdError {
  return new VoxdError(
    'E_MODEL_NOT_FOUND',
    `model: ${showValue(name)} is an alias of ${showValue(target)} (model_aliases), which this server cannot serve: ${why.message}`,
    { param: 'model' },
  );
}

/** The registered model a route that cannot wait names, by its id or an alias; undefined if none. */
export function registeredEntry(runtime: Runtime, name: string): ModelEntry | undefined {
  if (runtime.has(name)) return runtime.get(name);
  const target = aliasTarget(runtime.config.model_aliases, name);
  return target !== undefined && runtime.has(target) ? runtime.get(target) : undefined;
}

export function requireTask(model: ModelConfig, tasks: readonly TaskToken[], route: string): void {
  if (!tasks.includes(model.task)) {
    throw invalidField(
      'model',
      `model: ${showValue(model.id)} has task '${model.task}'; ${route} serves ${tasks.join(', ')} models (use /v1/tasks/run for any task)`,
    );
  }
}

/** Streamed answers need a model configured `mode: "streaming"` (audio.cpp answers 500; voxd 400). */
export function requireStreamingMode(model: ModelConfig): void {
  if (model.mode !== 'streaming') {
    throw invalidField(
      'stream',
      `stream: model ${showValue(model.id)} is configured mode "${model.mode}"; streamed responses need a model entry with "mode": "streaming"`,
    );
  }
}

/**
 * The model a live route's query names. Parameter errors on a live route are 400s, an unknown
 * model included (as in audio.cpp); the model must serve the route's tasks and be a streaming one.
 */
export function liveModel(
  runtime: Runtime,
  modelId: string,
  tasks: readonly TaskToken[],
  route: string,
): ModelEntry {
  // Registered models only: the live body must be opened before anything is awaited (an
  // installed package is registered by its first other request, or by /v1/models/load).
  const entry = registeredEntry(runtime, modelId);
  if (!entry) throw invalidField('model', `model: unknown model id: ${showValue(modelId)}`);
  requireTask(entry.config, tasks, route);
  requireStreamingMode(entry.config);
  return entry;
}
