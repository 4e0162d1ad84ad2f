/**
 * Model management: register/reconfigure and unload (gated by ui_management) and the bulk unload
 * routes (not gated, as in audio.cpp).
 */
import type { Static } from '@sinclair/typebox';
import { parseModelConfig, registrationBody } from '../../config/model-config.js';
import { readJsonObject } from '../request/body.js';
import { jsonRoute, managedRoute, queryRoute } from '../request/schema.js';
import { IdRequest, LoadModelRequest, UnloadModelsRequest } from '../schemas/management-request.js';
import {
  LoadModelResult,
  ModelConfig,
  UnloadAllResult,
  UnloadModelResult,
  UnloadModelsResult,
} from '../schemas/management-responses.js';
import { ModelIdQuery } from '../schemas/query.js';
import { type Route, type RouteContext, requireManagement } from '../transport/route.js';

async function load(ctx: RouteContext, body: Record<string, unknown>) {
  const { runtime, config, signal } = ctx;
  const { model } = parseModelConfig(body, {
    key: '',
    baseDir: config.base_dir,
    lazyDefault: true,
    parallel: config.parallel_jobs,
    knownFamilies: [...runtime.catalog.keys()],
  });
  return { json: await runtime.register(model, signal) };
}

async function unload(ctx: RouteContext, body: Static<typeof IdRequest>) {
  return { json: await ctx.runtime.unload(body.id, ctx.signal) };
}

/** GET /v1/ui/models/config?id=: the body that registers a model as it is now, to edit and send back. */
async function modelConfig(ctx: RouteContext, query: Static<typeof ModelIdQuery>) {
  return { json: registrationBody(ctx.runtime.get(query.id).config) };
}

async function unloadModels(ctx: RouteContext, body: Static<typeof UnloadModelsRequest>) {
  return { json: await ctx.runtime.bulkUnload(body.model_ids, ctx.signal) };
}

async function unloadAll({ runtime, signal }: RouteContext) {
  const { unloaded } = await runtime.bulkUnload(undefined, signal);
  return { json: { unloaded } satisfies Static<typeof UnloadAllResult> };
}

export const managementRoutes: Route[] = [
  // The configuration reader checks a registration (config/model-config.ts), as it checks the
  // config file's entries, so both refuse alike (`slots` without --parallel-jobs names the flag).
  {
    method: 'POST',
    path: '/v1/models/load',
    scope: 'admin',
    body: LoadModelRequest,
    response: LoadModelResult,
    handler: async (ctx) => {
      requireManagement(ctx);
      return load(ctx, await readJsonObject(ctx));
    },
  },
  managedRoute('/v1/models/unload', undefined, IdRequest, UnloadModelResult, unload),
  queryRoute({
    method: 'GET',
    path: '/v1/ui/models/config',
    scope: 'admin',
    query: ModelIdQuery,
    response: ModelConfig,
    guard: requireManagement,
    handler: modelConfig,
  }),
  jsonRoute({
    method: 'POST',
    path: '/v1/tasks/unload_models',
    scope: 'admin',
    body: UnloadModelsRequest,
    response: UnloadModelsResult,
    handler: unloadModels,
  }),
  {
    method: 'POST',
    path: '/v1/tasks/unload_all_models',
    scope: 'admin',
    response: UnloadAllResult,
    handler: unloadAll,
  },
];
