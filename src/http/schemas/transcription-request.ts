/**
 * The bodies of the transcription routes: JSON naming a server-local file, and the multipart
 * upload's fields (text, read as each field's type: src/http/request/form-text.ts). Both are checked
 * against these schemas and published by the document; what depends on the model or the route
 * (diarized_json, translation, chunking with a diarizer) is src/api/transcription/request.ts.
 */
import { type TSchema, Type } from '@sinclair/typebox';
import { RESPONSE_FORMATS } from '../../api/transcription/request.js';
import { BoolLike, BusyTimeout, OneOf, Optional, OptionObject, Text } from '../request/schema.js';

const UPLOAD = Type.String({
  contentMediaType: 'application/octet-stream',
  description: 'The audio upload.',
  'x-expected': 'an audio upload in the multipart field "file"',
});

/** A list field: an array, or one value for a list of one (as a form sends it). */
const List = <T extends TSchema>(items: T, expected: string) =>
  Type.Union([items, Type.Array(items)], { 'x-expected': expected });

/** A form's repeated `name[]` parts. */
const Repeated = <T extends TSchema>(items: T, expected: string) =>
  Type.Optional(Type.Array(items, { 'x-expected': expected }));

const GRANULARITY = OneOf(['word', 'segment']);
const INCLUDE = OneOf(['logprobs']);
const GRANULARITIES = 'a list of: word, segment';
const INCLUDES = 'a list of: logprobs';
const STRINGS = 'a list of strings';

/** A number from 0 to 1, or the text of one (a form field; JSON clients send either). */
const ZeroToOne = (description: string) =>
  Type.Union(
    [
      Type.Number({ minimum: 0, maximum: 1 }),
      Type.String({
        pattern: String.raw`^(?=.*\d)\s*(\+?(0*(\.\d*)?|0*1(\.0*)?)|-0*(\.0*)?)\s*$`,
        minLength: 1,
      }),
    ],
    { 'x-expected': 'a number from 0 to 1', description },
  );

const atLeastZero = (description: string) =>
  Type.Number({ minimum: 0, 'x-expected': 'a number >= 0', description });

/** `auto`, or the server_vad object whose numbers replace auto's (JSON text in a form field). */
const ChunkingStrategy = Type.Union(
  [
    Type.Literal('auto'),
    Type.Object(
      {
        type: OneOf(['server_vad']),
        prefix_padding_ms: Type.Optional(atLeastZero('Audio kept before speech (ms).')),
        silence_duration_ms: Type.Optional(atLeastZero('Silence that ends a chunk (ms).')),
        threshold: Type.Optional(
          Type.Number({
            minimum: 0,
            maximum: 1,
            'x-expected': 'a number from 0 to 1',
            description: 'A speech probability.',
          }),
        ),
      },
      { additionalProperties: true },
    ),
  ],
  {
    'x-expected': '"auto" or {"type":"server_vad",...}',
    description:
      '"auto", or {type: "server_vad", prefix_padding_ms?, silence_duration_ms?, threshold?} (in a form, as JSON text).',
  },
);

const OPTIONS = OptionObject('Engine options; in a form, a JSON object as text.');

const COMMON = {
  model: Text('Model id (task asr or diar), or one of its aliases.'),
  language: Optional(Type.String()),
  prompt: Optional(Type.String()),
  text: Optional(Type.String()),
  response_format: Optional(OneOf(RESPONSE_FORMATS)),
  timestamp_granularities: Optional(List(GRANULARITY, GRANULARITIES)),
  temperature: Optional(ZeroToOne('From 0 to 1.')),
  include: Optional(List(INCLUDE, INCLUDES)),
  known_speaker_names: Optional(List(Type.String(), STRINGS)),
  known_speaker_references: Optional(List(Type.String(), STRINGS)),
  chunking_strategy: Optional(ChunkingStrategy),
  options: Optional(OPTIONS),
  stream: Optional(BoolLike()),
  busy_timeout_ms: Optional(BusyTimeout()),
};

export const TranscriptionJsonRequest = Type.Object(
  {
    ...COMMON,
    audio: Optional(Type.String({ description: 'A server-local audio file.' })),
    audio_path: Optional(Type.String({ description: 'The same as audio.' })),
    file: Optional(Type.String({ description: 'The same as audio.' })),
  },
  {
    additionalProperties: true,
    title: 'TranscriptionJsonRequest',
    description: 'The audio is a server-local path in audio, audio_path or file (the first present).',
  },
);

/**
 * The multipart fields of POST /v1/audio/transcriptions (and translations): the JSON body's, each
 * sent as text and read as its type, lists also as repeated `name[]` parts, and the upload.
 */
export const TranscriptionForm = Type.Object(
  {
    ...COMMON,
    file: UPLOAD,
    'timestamp_granularities[]': Repeated(GRANULARITY, GRANULARITIES),
    'include[]': Repeated(INCLUDE, INCLUDES),
    'known_speaker_names[]': Repeated(Type.String(), STRINGS),
    'known_speaker_references[]': Repeated(Type.String(), STRINGS),
  },
  { additionalProperties: true, title: 'TranscriptionForm' },
);

/** The multipart fields of POST /v1/batches/transcriptions: one or more `file` parts. */
export const BatchTranscriptionForm = Type.Object(
  {
    model: COMMON.model,
    file: Type.Array(UPLOAD, { minItems: 1, 'x-expected': 'one or more audio uploads in "file" fields' }),
    language: COMMON.language,
    prompt: COMMON.prompt,
    text: COMMON.text,
    options: COMMON.options,
    busy_timeout_ms: COMMON.busy_timeout_ms,
  },
  { additionalProperties: true, title: 'BatchTranscriptionForm' },
);
