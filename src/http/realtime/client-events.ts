/**
 * The client events of a realtime transcription session (OpenAI's Realtime API, GA and beta
 * shapes), one TypeBox schema each, checked with the same checker as HTTP bodies: a bad field is an
 * `error` event whose `param` is its path (`session.audio.input.format.rate`) and whose message
 * shows the value. Fields voxd does not use pass through, as OpenAI's clients send more than
 * transcription needs.
 */
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { bodyChecker, OneOf, Optional } from '../request/schema.js';

const open = { additionalProperties: true } as const;

export const Transcription = Type.Object(
  {
    model: Optional(Type.String({ description: 'A voxd ASR model id or alias.' })),
    language: Optional(Type.String()),
    prompt: Optional(Type.String()),
  },
  open,
);

const ms = (max: number, words: string) =>
  Type.Integer({ minimum: 0, maximum: max, 'x-expected': `an integer from 0 to ${max} (${words})` });

/**
 * null: the client commits; server_vad: voxd's speech detection commits at the end of each turn;
 * semantic_vad: mapped to server_vad by its eagerness (src/http/realtime/turn-detection.ts). One
 * object for both types, so a bad field is named by its own path rather than by the union.
 */
export const TurnDetection = Type.Union(
  [
    Type.Null(),
    Type.Object(
      {
        type: OneOf(['server_vad', 'semantic_vad'] as const),
        threshold: Optional(Type.Number({ minimum: 0, maximum: 1, 'x-expected': 'a number from 0 to 1' })),
        prefix_padding_ms: Optional(ms(10_000, 'audio kept before the speech starts')),
        silence_duration_ms: Optional(ms(10_000, 'silence that ends a turn')),
        idle_timeout_ms: Optional(ms(3_600_000, '0 or null: none')),
        eagerness: Optional(OneOf(['low', 'medium', 'high', 'auto'] as const)),
      },
      open,
    ),
  ],
  { 'x-expected': 'null or an object with type server_vad or semantic_vad' },
);

export const GaFormat = Type.Object(
  {
    type: OneOf(['audio/pcm', 'audio/pcmu', 'audio/pcma'] as const),
    rate: Optional(
      Type.Integer({ minimum: 1000, maximum: 384000, 'x-expected': 'an integer from 1000 to 384000' }),
    ),
  },
  open,
);

/**
 * A GA session's config, as a session's `session.update` and minting a client secret
 * (src/http/schemas/realtime-secrets.ts) both take it; `turnDetection` differs between the two.
 */
export const GaSessionConfig = <T extends TSchema>(turnDetection: T, typeDescription?: string) =>
  Type.Object(
    {
      type: Optional(OneOf(['transcription'] as const, typeDescription)),
      audio: Optional(
        Type.Object(
          {
            input: Optional(
              Type.Object(
                {
                  format: Optional(GaFormat),
                  transcription: Optional(Transcription),
                  turn_detection: Type.Optional(turnDetection),
                },
                open,
              ),
            ),
          },
          open,
        ),
      ),
      include: Optional(Type.Array(Type.String())),
    },
    open,
  );

export const SessionUpdate = Type.Object(
  { type: Type.Literal('session.update'), session: GaSessionConfig(TurnDetection) },
  open,
);

export const TranscriptionSessionUpdate = Type.Object(
  {
    type: Type.Literal('transcription_session.update'),
    session: Type.Object(
      {
        input_audio_format: Optional(OneOf(['pcm16', 'g711_ulaw', 'g711_alaw'] as const)),
        input_audio_transcription: Optional(Transcription),
        turn_detection: Type.Optional(TurnDetection),
        include: Optional(Type.Array(Type.String())),
      },
      open,
    ),
  },
  open,
);

export const BufferAppend = Type.Object(
  { type: Type.Literal('input_audio_buffer.append'), audio: Type.String({ description: 'Base64 audio.' }) },
  open,
);

export const BufferCommit = Type.Object({ type: Type.Literal('input_audio_buffer.commit') }, open);
export const BufferClear = Type.Object({ type: Type.Literal('input_audio_buffer.clear') }, open);

/** A turn_detection field as the client sent it (checked). */
export type TurnDetectionField = Static<typeof TurnDetection>;

export type ClientEvent =
  | Static<typeof SessionUpdate>
  | Static<typeof TranscriptionSessionUpdate>
  | Static<typeof BufferAppend>
  | Static<typeof BufferCommit>
  | Static<typeof BufferClear>;

/** Each known event type's checker. */
export const CLIENT_EVENTS: Record<ClientEvent['type'], (event: Record<string, unknown>) => ClientEvent> = {
  'session.update': bodyChecker(SessionUpdate),
  'transcription_session.update': bodyChecker(TranscriptionSessionUpdate),
  'input_audio_buffer.append': bodyChecker(BufferAppend),
  'input_audio_buffer.commit': bodyChecker(BufferCommit),
  'input_audio_buffer.clear': bodyChecker(BufferClear),
};
