/**
 * The query strings of the routes that read one, once: each route checks its query against its
 * schema (queryRoute, src/http/request/schema.ts) and the OpenAPI document publishes every property
 * as a query parameter. A query value is text; properties declared integer or boolean are read
 * from their digits or from true/1/false/0 before the check, so the schema states the range.
 * Parameters not named here pass through (`api_key`, a client's cache-buster).
 */
import { type TOptional, type TProperties, type TString, Type } from '@sinclair/typebox';
import { SPEECH_KNOBS } from '../../api/request-options.js';
import { OneOf, Text } from '../request/schema.js';
import { STREAM_FORMATS } from './speech-request.js';

const query = <P extends TProperties>(properties: P) =>
  Type.Object(properties, { additionalProperties: true });

const flag = (description: string) =>
  Type.Optional(Type.Boolean({ description, 'x-expected': 'true, 1, false or 0' }));

const integer = (minimum: number, maximum: number, description: string) =>
  Type.Optional(
    Type.Integer({ minimum, maximum, description, 'x-expected': `an integer from ${minimum} to ${maximum}` }),
  );

const busyTimeout = {
  busy_timeout_ms: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      description: 'How long to wait for a busy model (ms); used when the body gives none.',
      'x-expected': 'an integer >= 0 (0 waits without limit)',
    }),
  ),
};

/** The inference routes that take a body: only the busy wait may come in the query. */
export const BusyQuery = query(busyTimeout);

/**
 * GET /v1/models and /v1/models/{id}. As in audio.cpp, true or 1 turns a flag on and any other
 * value leaves it off (never a 400), so these are plain text.
 */
export const ModelListQuery = query({
  include_session_options: Type.Optional(Type.String({ description: 'true or 1 adds session_options.' })),
  include_params: Type.Optional(
    Type.String({ description: "true or 1 adds params, the request options of the model's engine family." }),
  ),
});

/** GET /v1/audio/voices. */
export const VoicesQuery = query({
  model: Type.Optional(
    Type.String({ description: 'Model id; optional when exactly one model is registered.' }),
  ),
});

/** GET /v1/ui/models/config. */
export const ModelIdQuery = query({ id: Text('Model id.') });

/** GET /v1/ui/models/install-status. */
export const PackageQuery = query({ id: Type.Optional(Type.String({ description: 'A package id.' })) });

/** What both live routes read: the model, the input's PCM format and the busy wait. */
const live = {
  model: Text('Model id (a mode: "streaming" model).'),
  sample_rate: integer(1000, 384000, 'Input rate (default 16000).'),
  channels: integer(1, 16, 'Interleaved channels (default 1).'),
  sample_format: Type.Optional(OneOf(['s16le', 'f32le'] as const, 'Default s16le.')),
  language: Type.Optional(Type.String({ description: 'Passed to the engine.' })),
  ...busyTimeout,
};

/** The PCM format alone (src/http/live/pcm-format.ts reads it before the body is opened). */
export const LivePcmQuery = query({
  sample_rate: live.sample_rate,
  channels: live.channels,
  sample_format: live.sample_format,
});

/** Options a live speech request passes to the engine as text, as the JSON route's knobs. */
export const LIVE_SPEECH_OPTIONS = [
  ...SPEECH_KNOBS,
  'reference_text',
  'voice_id',
  'system_prompt',
  'text_temperature',
  'text_top_k',
  'do_sample',
] as const;

/** POST /v1/audio/speech/live. */
export const LiveSpeechQuery = query({
  ...live,
  input: Type.Optional(Type.String({ description: 'The text; required unless the task is s2s, vc or svc.' })),
  voice: Type.Optional(Type.String({ description: 'Voice, mapped as on /v1/audio/speech.' })),
  response_format: Type.Optional(OneOf(['pcm'] as const, 'pcm only.')),
  stream_format: Type.Optional(OneOf(STREAM_FORMATS, 'Default sse.')),
  return_text: flag("true or 1 adds each sentence's text before its audio (stream_format sse)."),
  instructions: Type.Optional(Type.String({ description: 'Option system_prompt.' })),
  ...(Object.fromEntries(
    LIVE_SPEECH_OPTIONS.map((name) => [
      name,
      Type.Optional(Type.String({ description: "Passed to the engine's options as text." })),
    ]),
  ) as Record<(typeof LIVE_SPEECH_OPTIONS)[number], TOptional<TString>>),
});

/** POST /v1/audio/transcriptions/live. */
export const LiveTranscriptionQuery = query({
  ...live,
  prompt: Type.Optional(Type.String({ description: 'Context text.' })),
});

/** GET /v1/realtime (the WebSocket upgrade; src/http/realtime/upgrade.ts reads it). */
export const RealtimeQuery = query({
  model: Type.Optional(
    Type.String({
      description:
        "An ASR or diarization model id or alias: the session's model until an update names another.",
    }),
  ),
  intent: Type.Optional(
    Type.String({ description: 'transcription (what OpenAI clients send); any value is taken.' }),
  ),
});
