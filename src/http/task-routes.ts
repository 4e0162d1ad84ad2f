/** Which task tokens each inference route serves. */
import type { ModelConfig, TaskToken } from '../config/types.js';
import { invalidRequest } from '../errors.js';

export function requireTask(model: ModelConfig, tasks: readonly TaskToken[], route: string): void {
  if (!tasks.includes(model.task)) {
    throw invalidRequest(
      `model: '${model.id}' has task '${model.task}'; ${route} serves ${tasks.join(', ')} models (use /v1/tasks/run for any task)`,
    );
  }
}
