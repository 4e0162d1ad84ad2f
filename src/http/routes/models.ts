/** GET /health, GET /ready, GET /v1/models and GET /v1/audio/voices: what the server holds, read from the runtime's own state. */
import type { Dirent } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { voiceAliases } from '../../engines/voice-aliases.js';
import { VoxdError } from '../../errors.js';
import { DEFAULT_PRESET } from '../../runtime/voice-presets.js';
import { queryFlag } from '../fields.js';
import { SPEECH_TASKS } from '../input-text.js';
import { modelList } from '../model-status.js';
import type { Route, RouteContext } from '../route.js';
import { isLibraryVoiceFile } from '../voice.js';

/** 503 once a shutdown began, so a load balancer stops sending work at once. */
async function health({ runtime, config }: RouteContext) {
  return {
    status: runtime.closing ? 503 : 200,
    json: {
      status: runtime.closing ? 'shutting_down' : 'ok',
      backend: 'cpu',
      models: runtime.size,
      ui: config.ui,
      ui_management: config.ui_management,
    },
  };
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
  return { json: { status: 'ready' } };
}

async function models(ctx: RouteContext) {
  const data = modelList(ctx.runtime, {
    sessionOptions: queryFlag(ctx, 'include_session_options'),
    params: queryFlag(ctx, 'include_params'),
  });
  return { json: { object: 'list', data } };
}

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
    // List only names that `voice` can select (src/http/voice.ts looks up `<name>.wav`, plain names only).
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

async function voices({ runtime, config, url }: RouteContext) {
  let id = url.searchParams.get('model') ?? undefined;
  if (id === undefined && runtime.size === 1) id = runtime.snapshots()[0]!.id;
  const names = await voiceDirNames(config.voice_dir);
  const json: Record<string, unknown> = {};
  if (id !== undefined && runtime.has(id)) {
    const entry = runtime.get(id);
    for (const name of entry.presets.keys()) if (name !== DEFAULT_PRESET) names.push(name);
    if (SPEECH_TASKS.includes(entry.config.task)) {
      // Each alias with the engine voice it speaks in; null: the model's default voice.
      const aliases = voiceAliases(entry.family.voiceAliases, entry.config.voice_aliases);
      names.push(...aliases.keys());
      json['aliases'] = Object.fromEntries([...aliases].map(([name, voice]) => [name, voice ?? null]));
    }
  }
  return { json: { voices: [...new Set(names)].sort(), ...json } };
}

export const modelRoutes: Route[] = [
  { method: 'GET', path: '/health', scope: 'open', handler: health },
  { method: 'GET', path: '/ready', scope: 'open', handler: ready },
  { method: 'GET', path: '/v1/models', scope: 'inference', handler: models },
  { method: 'GET', path: '/v1/audio/voices', scope: 'inference', handler: voices },
];
