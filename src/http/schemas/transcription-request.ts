/**
 * The bodies of the transcription routes: JSON naming a server-local file, and the multipart
 * upload's fields (each a string, as forms send them). The JSON body is checked against its schema
 * and both are published by the document; what depends on the model (diarized_json, translation,
 * chunking with a diarizer) is the route's check (src/api/transcription/request.ts).
 */
import { type TSchema, Type } from '@sinclair/typebox';
import { RESPONSE_FORMATS } from '../../api/transcription/request.js';
import { BoolLike, BusyTimeout, NumberLike, OneOf, Optional, OptionObject, Text } from '../request/schema.js';

const UPLOAD = Type.String({
  contentMediaType: 'application/octet-stream',
  description: 'The audio upload.',
});

/** A list field: an array of strings, or one string for a list of one (as a form sends it). */
const List = (items: TSchema = Type.String()) =>
  Type.Union([items, Type.Array(items)], { 'x-expected': 'a list of strings' });

const GRANULARITY = OneOf(['word', 'segment']);

const COMMON = {
  model: Text('Model id (task asr or diar), or one of its aliases.'),
  language: Optional(Type.String()),
  prompt: Optional(Type.String()),
  text: Optional(Type.String()),
  response_format: Optional(OneOf(RESPONSE_FORMATS)),
};

export const TranscriptionJsonRequest = Type.Object(
  {
    ...COMMON,
    audio: Optional(Type.String({ description: 'A server-local audio file.' })),
    audio_path: Optional(Type.String({ description: 'The same as audio.' })),
    file: Optional(Type.String({ description: 'The same as audio.' })),
    timestamp_granularities: Optional(List(GRANULARITY)),
    temperature: Optional(NumberLike('From 0 to 1.')),
    include: Optional(List()),
    known_speaker_names: Optional(List()),
    known_speaker_references: Optional(List()),
    chunking_strategy: Optional(
      Type.Union([Type.String(), Type.Object({}, { additionalProperties: true })], {
        'x-expected': '"auto" or a server_vad object',
        description: '"auto", or {type: "server_vad", prefix_padding_ms?, silence_duration_ms?, threshold?}.',
      }),
    ),
    options: Optional(
      Type.Union([OptionObject(), Type.String()], { 'x-expected': 'an object of option values' }),
    ),
    stream: Optional(BoolLike()),
    busy_timeout_ms: Optional(BusyTimeout()),
  },
  {
    additionalProperties: true,
    title: 'TranscriptionJsonRequest',
    description: 'The audio is a server-local path in audio, audio_path or file (the first present).',
  },
);

/** The multipart fields of POST /v1/audio/transcriptions (and translations). */
export const TranscriptionForm = Type.Object(
  {
    ...COMMON,
    file: UPLOAD,
    'timestamp_granularities[]': Type.Optional(Type.Array(GRANULARITY)),
    temperature: Type.Optional(Type.String({ description: 'A number from 0 to 1.' })),
    'include[]': Type.Optional(Type.Array(OneOf(['logprobs']))),
    'known_speaker_names[]': Type.Optional(Type.Array(Type.String())),
    'known_speaker_references[]': Type.Optional(Type.Array(Type.String())),
    chunking_strategy: Type.Optional(
      Type.String({ description: '"auto", or a server_vad object as JSON text.' }),
    ),
    options: Type.Optional(Type.String({ description: 'A JSON object, as text.' })),
    stream: Type.Optional(OneOf(['true', 'True', '1', 'false', 'False', '0'])),
    busy_timeout_ms: Type.Optional(Type.String({ description: 'Digits.' })),
  },
  { title: 'TranscriptionForm' },
);

/** The multipart fields of POST /v1/batches/transcriptions: one or more `file` parts. */
export const BatchTranscriptionForm = Type.Object(
  {
    model: COMMON.model,
    file: Type.Array(UPLOAD),
    language: Type.Optional(Type.String()),
    prompt: Type.Optional(Type.String()),
    text: Type.Optional(Type.String()),
    options: Type.Optional(Type.String({ description: 'A JSON object, as text.' })),
    busy_timeout_ms: Type.Optional(Type.String({ description: 'Digits.' })),
  },
  { title: 'BatchTranscriptionForm' },
);
