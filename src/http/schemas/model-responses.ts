/**
 * The answers of the operations and model routes: /health, /ready, the model list and one model,
 * the voices, and this document itself. Published as components under their titles.
 */
import { Type } from '@sinclair/typebox';
import { OneOf } from '../request/schema.js';
import { anyObject, arrayOf, bool, componentRef, int, nullable, object, str } from './response-schema.js';

export const Health = object(
  {
    status: OneOf(['ok', 'shutting_down']),
    backend: OneOf(['cpu']),
    models: int('Registered models, loaded or not.'),
    ui: bool(),
    ui_management: bool(),
  },
  ['status', 'backend', 'models', 'ui', 'ui_management'],
  { title: 'Health' },
);

export const Ready = object({ status: OneOf(['ready']) }, ['status'], { title: 'Ready' });

export const Model = object(
  {
    id: str('The model id, or for an alias entry the alias.'),
    object: OneOf(['model']),
    created: int('When the model was registered, in Unix seconds.'),
    owned_by: str(),
    alias_of: str('Alias entries only: the id of the model this name stands for (model_aliases).'),
    family: str(),
    task: str(),
    mode: OneOf(['offline', 'streaming']),
    slots: int('Parallel runtime only.'),
    active_slots: int('Parallel runtime only.'),
    queued_requests: int('Parallel runtime only.'),
    max_parallel_slots: nullable('integer'),
    loaded: bool(),
    path: str(),
    state: OneOf(['unloaded', 'loading', 'ready', 'unloading', 'registering', 'reconfiguring']),
    last_error: str('Why a fault last took the model down.'),
    isolation: OneOf(['model', 'session']),
    memory_estimate_mb: nullable('number'),
    aliases: arrayOf(str('Another name a request may use for this model (model_aliases).')),
    session_options: anyObject(),
    params: arrayOf(object({ name: str(), type: str(), description: str() }, ['name'])),
  },
  ['id', 'object', 'created', 'owned_by', 'family', 'task', 'mode', 'loaded', 'state', 'aliases'],
  { title: 'Model' },
);

export const ModelList = object(
  { object: OneOf(['list']), data: arrayOf(componentRef(Model)) },
  ['object', 'data'],
  {
    title: 'ModelList',
  },
);

export const Voices = object(
  {
    voices: arrayOf(str()),
    aliases: Type.Unsafe<Record<string, string | null>>({
      type: 'object',
      additionalProperties: { type: ['string', 'null'] },
      description: 'Each voice alias and the engine voice it speaks in (null: the default voice).',
    }),
  },
  ['voices'],
  { title: 'Voices' },
);

/** GET /openapi.json: checked no further than its top level, which the document's own tests look into. */
export const OpenApiDocument = Type.Unsafe<Record<string, unknown>>({
  type: 'object',
  required: ['openapi', 'info', 'paths'],
  title: 'OpenApiDocument',
  description: 'The OpenAPI 3.1 document.',
});
