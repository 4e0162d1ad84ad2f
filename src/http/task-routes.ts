/** Which task tokens and modes each inference route serves. */
import type { ModelConfig, TaskToken } from '../config/types.js';
import { invalidRequest } from '../errors.js';

export function requireTask(model: ModelConfig, tasks: readonly TaskToken[], route: string): void {
  if (!tasks.includes(model.task)) {
    throw invalidRequest(
      `model: '${model.id}' has task '${model.task}'; ${route} serves ${tasks.join(', ')} models (use /v1/tasks/run for any task)`,
    );
  }
}

/** Streamed answers need a model configured `mode: "streaming"` (audio.cpp answers 500; voxd 400). */
export function requireStreamingMode(model: ModelConfig): void {
  if (model.mode !== 'streaming') {
    throw invalidRequest(
      `stream: model '${model.id}' is configured mode "${model.mode}"; streamed responses need a model entry with "mode": "streaming"`,
    );
  }
}
