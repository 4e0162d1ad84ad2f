/**
 * The bodies of the management routes (model registration and unloading, the installer, the models
 * root and its folder picker), checked by the routes and published by the document. A registration
 * body is one `models[i]` entry of the configuration: the document publishes its fields here, and
 * the configuration reader (config/model-config.ts) checks it, as it checks the config file's
 * entries, so that both refuse alike; its fields are absent rather than null.
 */
import { Type } from '@sinclair/typebox';
import { MODEL_OPTION_MAPS } from '../../config/model-config.js';
import { OneOf, Optional, OptionObject, Text } from '../request/schema.js';

export const LoadModelRequest = Type.Object(
  {
    id: Text('The model id.'),
    family: Type.Optional(Type.String()),
    path: Type.Optional(Type.String()),
    package: Type.Optional(Type.String()),
    task: Type.Optional(Type.String()),
    mode: Type.Optional(OneOf(['offline', 'streaming'])),
    lazy: Type.Optional(Type.Boolean()),
    slots: Type.Optional(Type.Integer({ description: '1 to 16; needs --parallel-jobs.' })),
    ...Object.fromEntries(MODEL_OPTION_MAPS.map((name) => [name, Type.Optional(OptionObject())])),
    voice_presets: Type.Optional(Type.Object({}, { additionalProperties: true })),
    busy_timeout_ms: Type.Optional(Type.Integer({ minimum: 0, 'x-expected': 'an integer >= 0' })),
  },
  {
    additionalProperties: true,
    title: 'LoadModelRequest',
    description:
      'One models[i] entry of the server configuration (docs/configuration.md), or {id, package} for an installed package.',
  },
);

export const IdRequest = Type.Object({ id: Text() }, { additionalProperties: true, title: 'IdRequest' });

export const UnloadModelsRequest = Type.Object(
  {
    model_ids: Type.Array(Type.String(), { 'x-expected': "a 'model_ids' string array" }),
  },
  { additionalProperties: true, title: 'UnloadModelsRequest' },
);

export const PathRequest = Type.Object(
  {
    path: Optional(
      Type.String({
        pattern: '^[^\\u0000]*$',
        'x-expected': 'a path without NUL bytes',
        description: 'A folder (empty or absent: the default); relative to base_dir.',
      }),
    ),
  },
  { additionalProperties: true, title: 'PathRequest' },
);

export const InstallRequest = Type.Object(
  {
    id: Optional(Type.String()),
    url: Optional(Type.String()),
    family: Optional(Type.String()),
    sha256: Optional(Type.String()),
  },
  {
    additionalProperties: true,
    title: 'InstallRequest',
    description: '{id} for a catalogue package, or {url, id?, family?, sha256?} for an archive anywhere.',
  },
);
