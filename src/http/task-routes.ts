/** Which task tokens and modes each inference route serves. */
import type { ModelConfig, TaskToken } from '../config/types.js';
import { invalidRequest, showValue } from '../errors.js';
import type { ModelEntry } from '../runtime/model-entry.js';
import type { Runtime } from '../runtime/runtime.js';

/**
 * The model a request names: a registered one at once, or an installed package of that id, which
 * the runtime registers first (Runtime.resolve); 404 otherwise.
 */
export function modelEntry(runtime: Runtime, id: string): ModelEntry | Promise<ModelEntry> {
  return runtime.has(id) ? runtime.get(id) : runtime.resolve(id);
}

export function requireTask(model: ModelConfig, tasks: readonly TaskToken[], route: string): void {
  if (!tasks.includes(model.task)) {
    throw invalidRequest(
      `model: ${showValue(model.id)} has task '${model.task}'; ${route} serves ${tasks.join(', ')} models (use /v1/tasks/run for any task)`,
    );
  }
}

/** Streamed answers need a model configured `mode: "streaming"` (audio.cpp answers 500; voxd 400). */
export function requireStreamingMode(model: ModelConfig): void {
  if (model.mode !== 'streaming') {
    throw invalidRequest(
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
  query: URLSearchParams,
  tasks: readonly TaskToken[],
  route: string,
): ModelEntry {
  const modelId = query.get('model');
  if (!modelId) throw invalidRequest("model: the 'model' query parameter is required");
  // Registered models only: the live body must be opened before anything is awaited (an
  // installed package is registered by its first other request, or by /v1/models/load).
  if (!runtime.has(modelId)) throw invalidRequest(`model: unknown model id: ${showValue(modelId)}`);
  const entry = runtime.get(modelId);
  requireTask(entry.config, tasks, route);
  requireStreamingMode(entry.config);
  return entry;
}
