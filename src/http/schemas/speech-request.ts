/**
 * The body of POST /v1/audio/speech, once: the route checks requests against it and the OpenAPI
 * document publishes it (components.schemas.SpeechRequest). Every field but `model` and `input`
 * may be null, which means absent (audio.cpp's clients send nulls). Fields not listed pass through
 * (clients send OpenAI fields voxd does not use).
 */
import { Type } from '@sinclair/typebox';
import { SPEECH_KNOBS } from '../../api/request-options.js';
import { SPEECH_FORMATS } from '../../api/speech/output.js';
import {
  BoolLike,
  BusyTimeout,
  IntegerLike,
  NumberLike,
  OneOf,
  Optional,
  OptionObject,
  Text,
} from '../request/schema.js';

export const STREAM_FORMATS = ['sse', 'audio'] as const;

/** The kind of number each generation knob (SPEECH_KNOBS, copied into the engine's options) is. */
export const SPEECH_KNOB_KINDS: Record<
  (typeof SPEECH_KNOBS)[number],
  typeof IntegerLike | typeof NumberLike
> = {
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
  SPEECH_KNOBS.map((name) => [name, Optional(SPEECH_KNOB_KINDS[name]('Copied into options.'))]),
);

const positive = () => Type.Number({ exclusiveMinimum: 0, 'x-expected': 'a positive number' });

export const SpeechRequest = Type.Object(
  {
    model: Text('Model id (task tts, clon or vdes), or one of its aliases.'),
    input: Text('Text to speak, at most max_input_chars characters.'),
    response_format: Optional(
      OneOf(
        SPEECH_FORMATS,
        'Default: the server default_speech_format (wav). Streamed: pcm, mp3, opus, aac or flac.',
      ),
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
            type: OneOf(['path', 'base64']),
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
    speed: Optional(positive()),
    speaking_rate: Optional(positive()),
    ...KNOBS,
    options: Optional(OptionObject()),
    busy_timeout_ms: Optional(BusyTimeout()),
    stream: Optional(BoolLike('true (or "true"/"1") streams; needs a streaming model.')),
    stream_format: Optional(OneOf(STREAM_FORMATS)),
  },
  { additionalProperties: true, title: 'SpeechRequest' },
);
