/** GET /health, GET /ready, GET /v1/models and GET /v1/audio/voices: what the server holds, read from the runtime's own state. */
import type { Dirent } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Static } from '@sinclair/typebox';
import { missingAliasTarget, registeredEntry } from '../../api/model-lookup.js';
import { modelById, modelsWithAliases } from '../../api/model-status.js';
import { SPEECH_TASKS } from '../../api/speech/input-text.js';
import { isLibraryVoiceFile } from '../../api/speech/voice.js';
import { aliasTarget } from '../../config/model-aliases.js';
import { MODEL_ID } from '../../config/model-config.js';
import { voiceAliases } from '../../engines/voice-aliases.js';
import { showValue, unknownModel, VoxdError } from '../../errors.js';
import { missingModel } from '../../runtime/reconfiguration.js';
import type { Runtime } from '../../runtime/runtime.js';
import { DEFAULT_PRESET } from '../../runtime/voice-presets.js';
import { queryRoute } from '../request/schema.js';
import { Health, Model, ModelList, Ready, Voices } from '../schemas/model-responses.js';
import { ModelListQuery, VoicesQuery } from '../schemas/query.js';
import type { Route, RouteContext } from '../transport/route.js';

/** 503 once a shutdown began, so a load balancer stops sending work at once. */
async function health({ runtime, config }: RouteContext) {
  const json: Static<typeof Health> = {
    status: runtime.closing ? 'shutting_down' : 'ok',
    backend: 'cpu',
    models: runtime.size,
    ui: config.ui,
    ui_management: config.ui_management,
  };
  return { status: runtime.closing ? 503 : 200, json };
}

/**
 * A readiness probe: 200 while voxd takes work, 503 from the moment a shutdown begins and, with
 * ready_when_saturated, while every loaded model's queue is saturated.
 */
async function ready({ runtime, config }: RouteContext) {
  if (runtime.closing) throw new VoxdError('E_SHUTTING_DOWN', 'voxd is shutting down and takes no new work');
  if (config.ready_when_saturated && runtime.saturated) {
    throw new VoxdError(
      'E_QUEUE_FULL',
      "every loaded model's queue is full (max_queued_requests); ready again once one drains to half its bound",
    );
  }
  return { json: { status: 'ready' } satisfies Static<typeof Ready> };
}

type ListQuery = Static<typeof ModelListQuery>;

const on = (flag: string | undefined) => flag === 'true' || flag === '1';

const listOptions = (query: ListQuery) => ({
  sessionOptions: on(query.include_session_options),
  params: on(query.include_params),
});

async function models(ctx: RouteContext, query: ListQuery) {
  return { json: { object: 'list', data: modelsWithAliases(ctx.runtime, listOptions(query)) } };
}

const MODEL_PATH = '/v1/models/';

/**
 * GET /v1/models/{id} (OpenAI's models.retrieve): the entry GET /v1/models lists under that id, a
 * model's or an alias's. Read-only: an installed package that no request registered yet is not
 * registered (and loaded) by asking about it, only named in the 404.
 */
async function model(ctx: RouteContext, query: ListQuery) {
  const { runtime } = ctx;
  const id = ctx.url.pathname.slice(MODEL_PATH.length);
  const found = modelById(runtime, id, listOptions(query));
  if (found) return { json: found };
  const target = aliasTarget(runtime.config.model_aliases, id);
  if (target === undefined) throw await notHere(runtime, id);
  throw missingAliasTarget(id, target, await notHere(runtime, target));
}

/** Why `id` is not a registered model: unknown, not installed, or installed and not registered yet. */
async function notHere(runtime: Runtime, id: string): Promise<VoxdError> {
  if (!MODEL_ID.test(id)) return unknownModel(id);
  const root = runtime.modelsRoot;
  if (await isDirectory(join(root.root, id)))
    return new VoxdError(
      'E_MODEL_NOT_FOUND',
      `unknown model id: ${showValue(id)}: it is installed in the models root but not registered yet; its first request (or POST /v1/models/load) registers it`,
      { param: 'model' },
    );
  return missingModel(id, root.installer);
}

const isDirectory = (path: string) =>
  stat(path).then(
    (s) => s.isDirectory(),
    () => false,
  );

async function voiceDirNames(dir: string | undefined): Promise<string[]> {
  if (!dir) return [];
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  const names: string[] = [];
  for (const entry of entries) {
    // List only names that `voice` can select (src/api/speech/voice.ts looks up `<name>.wav`, plain names only).
    if (!isLibraryVoiceFile(entry.name)) continue;
    // A folder named `x.wav` is not a voice; a link counts when it leads to a file.
    const file =
      entry.isFile() ||
      (entry.isSymbolicLink() &&
        (await stat(join(dir, entry.name)).then(
          (s) => s.isFile(),
          () => false,
        )));
    if (file) names.push(entry.name.slice(0, -4));
  }
  return names;
}

async function voices({ runtime, config }: RouteContext, query: Static<typeof VoicesQuery>) {
  let id = query.model;
  if (id === undefined && runtime.size === 1) id = runtime.snapshots()[0]!.id;
  const names = await voiceDirNames(config.voice_dir);
  const json: Pick<Static<typeof Voices>, 'aliases'> = {};
  const entry = id === undefined ? undefined : registeredEntry(runtime, id);
  if (entry) {
    for (const name of entry.presets.keys()) if (name !== DEFAULT_PRESET) names.push(name);
    if (SPEECH_TASKS.includes(entry.config.task)) {
      // Each alias with the engine voice it speaks in; null: the model's default voice.
      const aliases = voiceAliases(entry.family.voiceAliases, entry.config.voice_aliases);
      names.push(...aliases.keys());
      json.aliases = Object.fromEntries([...aliases].map(([name, voice]) => [name, voice ?? null]));
    }
  }
  return { json: { voices: [...new Set(names)].sort(), ...json } satisfies Static<typeof Voices> };
}

export const modelRoutes: Route[] = [
  { method: 'GET', path: '/health', scope: 'open', response: Health, handler: health },
  { method: 'GET', path: '/ready', scope: 'open', response: Ready, handler: ready },
  queryRoute({
    method: 'GET',
    path: '/v1/models',
    scope: 'inference',
    query: ModelListQuery,
    response: ModelList,
    handler: models,
  }),
  queryRoute({
    method: 'GET',
    path: `${MODEL_PATH}{id}`,
    scope: 'inference',
    query: ModelListQuery,
    response: Model,
    handler: model,
  }),
  queryRoute({
    method: 'GET',
    path: '/v1/audio/voices',
    scope: 'inference',
    query: VoicesQuery,
    response: Voices,
    handler: voices,
  }),
];
