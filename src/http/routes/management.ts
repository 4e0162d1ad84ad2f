/**
 * Model management: register/reconfigure and unload (gated by ui_management) and the bulk unload
 * routes (not gated, as in audio.cpp).
 */
import { parseModelConfig, registrationBody } from '../../config/model-config.js';
import { invalidRequest } from '../../errors.js';
import { readJsonObject } from '../body.js';
import { queryParam, requireString } from '../fields.js';
import { type Route, type RouteContext, requireManagement } from '../route.js';

async function load(ctx: RouteContext) {
  requireManagement(ctx);
  const { runtime, config, signal } = ctx;
  const body = await readJsonObject(ctx);
  const { model } = parseModelConfig(body, {
    key: '',
    baseDir: config.base_dir,
    lazyDefault: true,
    parallel: config.parallel_jobs,
    knownFamilies: [...runtime.catalog.keys()],
  });
  return { json: await runtime.register(model, signal) };
}

async function unload(ctx: RouteContext) {
  requireManagement(ctx);
  const body = await readJsonObject(ctx);
  return { json: await ctx.runtime.unload(requireString(body, 'id'), ctx.signal) };
}

/** GET /v1/ui/models/config?id=: the body that registers a model as it is now, to edit and send back. */
async function modelConfig(ctx: RouteContext) {
  requireManagement(ctx);
  const id = queryParam(ctx, 'id');
  if (!id) throw invalidRequest('id is missing; expected a registered model id in the query (?id=)');
  return { json: registrationBody(ctx.runtime.get(id).config) };
}

async function unloadModels(ctx: RouteContext) {
  const { runtime, signal } = ctx;
  const body = await readJsonObject(ctx);
  const ids = body['model_ids'];
  if (!Array.isArray(ids)) throw invalidRequest("request requires a 'model_ids' string array");
  if (!ids.every((id): id is string => typeof id === 'string')) {
    throw invalidRequest("each element of 'model_ids' must be a string");
  }
  return { json: await runtime.bulkUnload(ids, signal) };
}

async function unloadAll({ runtime, signal }: RouteContext) {
  const { unloaded } = await runtime.bulkUnload(undefined, signal);
  return { json: { unloaded } };
}

export const managementRoutes: Route[] = [
  { method: 'POST', path: '/v1/models/load', scope: 'admin', handler: load },
  { method: 'POST', path: '/v1/models/unload', scope: 'admin', handler: unload },
  { method: 'GET', path: '/v1/ui/models/config', scope: 'admin', handler: modelConfig },
  { method: 'POST', path: '/v1/tasks/unload_models', scope: 'admin', handler: unloadModels },
  { method: 'POST', path: '/v1/tasks/unload_all_models', scope: 'admin', handler: unloadAll },
];
