/**
 * Which voxd model a Deepgram request's `model` stands for. A client written for Deepgram names
 * Deepgram's models (`nova-3`, `aura-2-thalia-en`) and must work unchanged: such a name, or none,
 * is the model `deepgram_listen_model` / `deepgram_speak_model` names (unset: the first model
 * registered with the task), speaking with `deepgram_speak_voice`. A name voxd serves (a model id,
 * an alias, an installed package) is that model, even one that looks like Deepgram's
 * (`whisper-base.en`). Any other name is a 404 naming the parameter, so a typo is not silently
 * another model.
 */
import { createHash } from 'node:crypto';
import { modelEntry, requireTask } from '../../api/model-lookup.js';
import type { ServerConfig, TaskToken } from '../../config/types.js';
import { isVoxdError, showValue, VoxdError } from '../../errors.js';
import type { ModelEntry } from '../../runtime/model-entry.js';
import type { Runtime } from '../../runtime/runtime.js';

/** Deepgram's model families: a name of one stands for the configured model. */
const DEEPGRAM_FAMILIES = /^(nova|aura|base|enhanced|whisper|flux|general|phonecall|meeting)(-|$)/i;

/** Whether `name` is one of Deepgram's model names. */
export function isDeepgramName(name: string): boolean {
  return DEEPGRAM_FAMILIES.test(name);
}

export interface DeepgramModel {
  entry: ModelEntry;
  /** The voice a Deepgram voice name speaks with (`deepgram_speak_voice`); undefined: the model's default. */
  voice: string | undefined;
  /** The name the client asked for (a Deepgram name is echoed back in Metadata as Deepgram does). */
  asked: string | undefined;
}

/**
 * The model of a `/v1/listen` (`socket` "listen", an ASR model) or `/v1/speak` (a `tts` model)
 * request whose `model` parameter is `name`.
 */
export async function deepgramModel(
  runtime: Runtime,
  config: ServerConfig,
  name: string | undefined,
  socket: 'listen' | 'speak',
): Promise<DeepgramModel> {
  const tasks: readonly TaskToken[] = socket === 'listen' ? ['asr'] : ['tts'];
  const route = socket === 'listen' ? '/v1/listen' : '/v1/speak';
  const setting = socket === 'listen' ? 'deepgram_listen_model' : 'deepgram_speak_model';
  // A name voxd knows (a model, an alias, an installed package) is that model, whatever it looks like.
  const own = name === undefined || name === '' ? undefined : await knownModel(runtime, name);
  if (own) {
    requireTask(own.config, tasks, route);
    return { entry: own, voice: undefined, asked: name };
  }
  const named = name !== undefined && name !== '' && !isDeepgramName(name);
  const id = named ? name : socket === 'listen' ? config.deepgram_listen_model : config.deepgram_speak_model;
  const fallback = runtime.snapshots().find((m) => (tasks as readonly string[]).includes(m.task))?.id;
  const chosen = id ?? fallback;
  if (chosen === undefined)
    throw new VoxdError(
      'E_MODEL_NOT_FOUND',
      `model: ${showValue(name ?? '')} stands for ${setting}, which is unset, and no ${tasks.join(' or ')} model is registered`,
      { param: 'model' },
    );
  let entry: ModelEntry;
  try {
    entry = await modelEntry(runtime, chosen);
  } catch (err) {
    if (err instanceof VoxdError && !named)
      throw new VoxdError(err.code, `model: ${showValue(name ?? '')} stands for ${setting}: ${err.message}`, {
        param: 'model',
      });
    throw err;
  }
  requireTask(entry.config, tasks, route);
  const voice = socket === 'speak' && !named ? (config.deepgram_speak_voice ?? undefined) : undefined;
  return { entry, voice, asked: name };
}

/** The model voxd serves under `name`, or undefined when it serves none (a 404 of the lookup). */
async function knownModel(runtime: Runtime, name: string): Promise<ModelEntry | undefined> {
  try {
    return await modelEntry(runtime, name);
  } catch (err) {
    if (isVoxdError(err) && err.code === 'E_MODEL_NOT_FOUND') return undefined;
    throw err;
  }
}

/**
 * A stable UUID for a model id (name-based, version 5 shaped), as Deepgram's `model_uuid` is the
 * same for a model across sessions and restarts.
 */
export function modelUuid(id: string): string {
  const hex = createHash('sha1').update(`voxd-model:${id}`).digest('hex');
  const variant = ((Number.parseInt(hex[16] ?? '0', 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
