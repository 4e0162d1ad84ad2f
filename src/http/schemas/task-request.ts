/**
 * The bodies of POST /v1/tasks/run, /v1/tasks/stream and /v1/tasks/batch: the audio.cpp CLI's
 * request fields (reference §1.11-1.13), checked by the routes and published by the document.
 * Every field may be null (absent); unknown fields pass through.
 */
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { PATH_OPTIONS, SPEECH_KNOBS, TASK_KNOBS, TASK_RENAMES } from '../../api/request-options.js';
import * as Field from '../request/schema.js';
import { SPEECH_KNOB_KINDS } from './speech-request.js';

/** The kind of value of each knob beyond the speech ones; anything else is text or a number. */
const TASK_KNOB_KINDS: Partial<Record<(typeof TASK_KNOBS)[number], (description?: string) => TSchema>> = {
  do_sample: Field.BoolLike,
  return_timestamps: Field.BoolLike,
  num_beams: Field.IntegerLike,
  text_chunk_size: Field.IntegerLike,
  audio_chunk_seconds: Field.NumberLike,
  duration_seconds: Field.NumberLike,
  repaint_strength: Field.NumberLike,
  speaking_rate: Field.NumberLike,
  pitch_shift: Field.NumberLike,
  energy_scale: Field.NumberLike,
};

const knobKind = (name: (typeof TASK_KNOBS)[number]) =>
  (SPEECH_KNOBS as readonly string[]).includes(name)
    ? SPEECH_KNOB_KINDS[name as (typeof SPEECH_KNOBS)[number]]
    : (TASK_KNOB_KINDS[name] ?? Field.Scalar);

const KNOBS = Object.fromEntries([
  ...TASK_KNOBS.map((name) => [name, Field.Optional(knobKind(name)(`Copied into options.${name}.`))]),
  ...Object.entries(TASK_RENAMES).map(([field, option]) => [
    field,
    Field.Optional(
      field.startsWith('repaint_')
        ? Field.NumberLike(`Copied into options.${option}.`)
        : Field.Scalar(`Copied into options.${option}.`),
    ),
  ]),
]);

const PATHS = Object.fromEntries(
  PATH_OPTIONS.map((name) => [
    name,
    Field.Optional(Type.String({ description: 'A server-local file path.' })),
  ]),
);

/** The request fields, on their own (`request`, `requests[i]`) or at the top of a run body. */
const REQUEST_FIELDS = {
  ...KNOBS,
  text: Field.Optional(Type.String()),
  language: Field.Optional(Type.String()),
  audio: Field.Optional(
    Type.String({
      description: 'The path of a server-local audio file (WAV or any container ffmpeg decodes).',
    }),
  ),
  audio_base64: Field.Optional(
    Field.Text('Base64 audio (WAV or any container ffmpeg decodes) or a data: URI.'),
  ),
  voice_id: Field.Optional(Type.String()),
  voice_ref: Field.Optional(Type.String({ description: 'The path of a server-local audio file.' })),
  reference_text: Field.Optional(Type.String()),
  options: Field.Optional(Field.OptionObject()),
  ...PATHS,
  busy_timeout_ms: Field.Optional(Field.BusyTimeout()),
};

export const TaskRequest = Type.Object(REQUEST_FIELDS, {
  additionalProperties: true,
  title: 'TaskRequest',
  description:
    'The audio.cpp CLI request fields (text, language, audio, audio_base64, voice_id, voice_ref, reference_text, options and the option knobs of docs/api.md). Unknown fields are ignored.',
});

const RUN_FIELDS = {
  ...REQUEST_FIELDS,
  model: Field.Text('Model id, or one of its aliases.'),
  request: Field.Optional(TaskRequest),
};

export const TaskRunRequest = Type.Object(RUN_FIELDS, {
  additionalProperties: true,
  title: 'TaskRunRequest',
  description: 'Without `request`, the body itself is the request (the TaskRequest fields at the top level).',
});

export const TaskStreamRequest = Type.Object(
  { ...RUN_FIELDS, stream_format: Field.Optional(Field.OneOf(['sse'])) },
  { additionalProperties: true, title: 'TaskStreamRequest', description: TaskRunRequest.description },
);

export const TaskBatchRequest = Type.Object(
  {
    model: Field.Text('Model id, or one of its aliases.'),
    requests: Type.Array(TaskRequest, {
      minItems: 1,
      'x-expected': 'a non-empty array of request objects',
    }),
    busy_timeout_ms: Field.Optional(Field.BusyTimeout()),
  },
  { additionalProperties: true, title: 'TaskBatchRequest' },
);

export type TaskFields = Static<typeof TaskRequest>;
