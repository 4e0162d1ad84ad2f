/**
 * The body of POST /v1/audio/speech, once: the route checks requests against it and the OpenAPI
 * document publishes it (components.schemas.SpeechRequest). Every field but `model` and `input`
 * may be null, which means absent (audio.cpp's clients send nulls). Fields not listed pass through
 * (clients send OpenAI fields voxd does not use).
 */
import { Type } from '@sinclair/typebox';
import { SPEECH_KNOBS } from '../request-options.js';
import { IntegerLike, NumberLike, Optional } from '../request-schema.js';
import { SPEECH_FORMATS } from '../speech-output.js';

export const STREAM_FORMATS = ['sse', 'audio'] as const;

const text = (description: string) =>
  Type.String({ minLength: 1, 'x-expected': 'a non-empty string', description });

/** The kind of number each generation knob (SPEECH_KNOBS, copied into the engine's options) is. */
const KNOB_KINDS: Record<(typeof SPEECH_KNOBS)[number], typeof IntegerLike | typeof NumberLike> = {
  seed: IntegerLike,
  temperature: NumberLike,
  top_k: IntegerLike,
  top_p: NumberLike,
  max_tokens: IntegerLike,
  max_steps: IntegerLike,
  repetition_penalty: NumberLike,
  guidance_scale: NumberLike,
  num_inference_steps: IntegerLike,
};
const KNOBS = Object.fromEntries(
  SPEECH_KNOBS.map((name) => [name, Optional(KNOB_KINDS[name]('Copied into options.'))]),
);

export const SpeechRequest = Type.Object(
  {
    model: text('Model id (task tts, clon or vdes), or one of its aliases.'),
    input: text('Text to speak, at most max_input_chars characters.'),
    response_format: Optional(
      Type.String({
        enum: [...SPEECH_FORMATS],
        description:
          'Default: the server default_speech_format (wav). Streamed: pcm, mp3, opus, aac or flac.',
      }),
    ),
    sample_rate: Optional(
      Type.Integer({ minimum: 1000, maximum: 384000, 'x-expected': 'an integer in 1000..384000' }),
    ),
    voice: Optional(
      Type.Union([Type.String(), Type.Object({ id: Type.String() })], {
        'x-expected': 'a voice name or {"id": name}',
        description: 'A preset, a voice_dir voice, an OpenAI voice name or a model-native voice id.',
      }),
    ),
    voice_ref: Optional(
      Type.Union(
        [
          Type.String({ description: 'A server path.' }),
          Type.Object({
            type: Type.String({ enum: ['path', 'base64'] }),
            path: Type.Optional(Type.String()),
            data: Type.Optional(Type.String()),
          }),
        ],
        { 'x-expected': 'a path, {"type":"path","path":...} or {"type":"base64","data":...}' },
      ),
    ),
    reference_text: Optional(Type.String()),
    language: Optional(Type.String()),
    instructions: Optional(Type.String()),
    speed: Optional(Type.Number({ exclusiveMinimum: 0, 'x-expected': 'a positive number' })),
    speaking_rate: Optional(Type.Number({ exclusiveMinimum: 0, 'x-expected': 'a positive number' })),
    ...KNOBS,
    options: Optional(
      Type.Object({}, { additionalProperties: true, 'x-expected': 'an object of option values' }),
    ),
    busy_timeout_ms: Optional(
      Type.Union([Type.Integer({ minimum: 0 }), Type.String({ pattern: '^\\d+$' })], {
        'x-expected': 'an integer >= 0 (0 waits without limit)',
        description: 'An integer >= 0, or a string of digits: how long to wait for a busy model (ms).',
      }),
    ),
    stream: Optional(
      Type.Union([Type.Boolean(), Type.String({ enum: ['true', 'True', '1', 'false', 'False', '0'] })], {
        'x-expected': 'true or false',
        description: 'true (or "true"/"1") streams; needs a streaming model.',
      }),
    ),
    stream_format: Optional(Type.String({ enum: [...STREAM_FORMATS] })),
  },
  { additionalProperties: true },
);
