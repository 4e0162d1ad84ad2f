/**
 * The bodies of the ephemeral-key routes, in OpenAI's shapes: `POST /v1/realtime/client_secrets`
 * (GA: `{expires_after, session}` -> `{value, expires_at, session}`) and the beta
 * `POST /v1/realtime/transcription_sessions` (a transcription session's config -> that session with
 * `client_secret: {value, expires_at}`). The session fields are those a realtime session's own
 * update takes (src/http/realtime/client-events.ts), so a config that minting takes is one the
 * session would take; fields voxd does not use pass through, as in the session's events.
 */
import { Type } from '@sinclair/typebox';
import { GaSessionConfig, Transcription, TurnDetection } from '../realtime/client-events.js';
import { MAX_LIFE_S, MIN_LIFE_S } from '../realtime/client-secrets.js';
import { OneOf, Optional } from '../request/schema.js';
import { anyObject, int, object, str } from './response-schema.js';

const open = { additionalProperties: true } as const;

/**
 * turn_detection as OpenAI's create requests type it: `type` may be left out (server_vad), where a
 * session's update names it. The fields are the update's own.
 */
const MintTurnDetection = Type.Union([Type.Null(), Type.Partial(TurnDetection.anyOf[1]!)], {
  'x-expected': 'null or a turn detection object (type server_vad or semantic_vad)',
});

const Seconds = Type.Integer({
  minimum: MIN_LIFE_S,
  maximum: MAX_LIFE_S,
  'x-expected': `an integer from ${MIN_LIFE_S} to ${MAX_LIFE_S} (seconds)`,
  description: `The key's life in seconds, ${MIN_LIFE_S} to ${MAX_LIFE_S}; 600 when left out.`,
});

const ExpiresAfter = Type.Object(
  { anchor: Optional(OneOf(['created_at'] as const)), seconds: Optional(Seconds) },
  open,
);

export const ClientSecretRequest = Type.Object(
  {
    expires_after: Optional(ExpiresAfter),
    session: Optional(
      GaSessionConfig(
        MintTurnDetection,
        "voxd's realtime sessions transcribe: only transcription (OpenAI's realtime conversations are not served).",
      ),
    ),
  },
  {
    ...open,
    title: 'ClientSecretRequest',
    description:
      "OpenAI's client secret request: the key's life and the transcription session it starts (docs/realtime.md).",
  },
);

export const TranscriptionSessionRequest = Type.Object(
  {
    client_secret: Optional(Type.Object({ expires_at: Optional(ExpiresAfter) }, open)),
    input_audio_format: Optional(OneOf(['pcm16', 'g711_ulaw', 'g711_alaw'] as const)),
    input_audio_transcription: Optional(Transcription),
    turn_detection: Type.Optional(MintTurnDetection),
    include: Optional(Type.Array(Type.String())),
  },
  {
    ...open,
    title: 'TranscriptionSessionRequest',
    description:
      "OpenAI's beta transcription session request: the session's config, and the key's life under client_secret.expires_at.",
  },
);

const Secret = {
  value: str('The ephemeral key, `ek_...`: accepted only by the /v1/realtime upgrade.'),
  expires_at: int('When the key expires, in seconds since the epoch.'),
};

/** The transcription session a key starts, in the realtime events' own shapes. */
const sessionShape = anyObject();

export const ClientSecret = object({ ...Secret, session: sessionShape }, ['value', 'expires_at', 'session'], {
  title: 'ClientSecret',
});

export const TranscriptionSessionSecret = object(
  {
    id: str(),
    object: str(),
    input_audio_format: str(),
    input_audio_transcription: anyObject(),
    turn_detection: Type.Unsafe<Record<string, unknown> | null>({
      type: ['object', 'null'],
      additionalProperties: true,
    }),
    include: Type.Array(Type.String()),
    client_secret: object(Secret, ['value', 'expires_at']),
  },
  ['id', 'object', 'client_secret'],
  { title: 'TranscriptionSessionSecret' },
);
