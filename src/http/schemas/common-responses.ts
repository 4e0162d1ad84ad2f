/**
 * The response schemas that other answers share: the error body, the timing of a run, the usage of
 * a transcription and the pieces of a transcript. Published as components of the document
 * (src/http/openapi.ts) under their titles.
 */
import { Type } from '@sinclair/typebox';
import { OneOf } from '../request/schema.js';
import { int, nullable, num, object, str } from './response-schema.js';

/** Closed, unlike the answers: every error is exactly this object. */
export const ErrorBody = Type.Object(
  {
    error: Type.Object(
      {
        message: str('What went wrong, naming the field and value at fault.'),
        type: str('The class of error (invalid_request_error, not_found, server_busy, ...).'),
        param: nullable('string', 'The request field at fault, or null.'),
        code: str('A stable machine-readable code (docs/errors.md).'),
      },
      { additionalProperties: false },
    ),
  },
  {
    title: 'Error',
    description: 'Every error body: the OpenAI error object, whose message and type are the audio.cpp body.',
    additionalProperties: false,
  },
);

export const Timing = object(
  {
    wall_ms: num('From the moment the request got its session to the result.'),
    audio_duration_ms: num(
      'Duration of the output audio (speech, tasks) or of the input audio (transcriptions).',
    ),
    rtf: num('wall_ms / audio_duration_ms.'),
  },
  ['wall_ms'],
  { title: 'Timing' },
);

export const StreamTiming = object({ ttft_ms: nullable('integer') }, ['ttft_ms'], { title: 'StreamTiming' });

export const DurationUsage = object(
  {
    type: OneOf(['duration']),
    seconds: int('The input audio in whole seconds, rounded up (as OpenAI answers).'),
  },
  ['type', 'seconds'],
  { title: 'DurationUsage' },
);

export const SpeakerTurn = object(
  { start_sample: int(), end_sample: int(), speaker_id: int(), confidence: num(), text: str() },
  ['start_sample', 'end_sample', 'speaker_id'],
  { title: 'SpeakerTurn' },
);

export const Segment = object(
  { start_sample: int(), end_sample: int(), confidence: num(), text: str() },
  ['start_sample', 'end_sample'],
  { title: 'Segment' },
);

export const Word = object(
  { word: str(), start_sample: int(), end_sample: int(), confidence: num() },
  ['word', 'start_sample', 'end_sample'],
  { title: 'Word' },
);
