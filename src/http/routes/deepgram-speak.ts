/**
 * `POST /v1/speak`: Deepgram's REST text to speech, as `@deepgram/sdk`'s
 * `client.speak.v1.audio.generate` calls it: a JSON body `{"text"}` and the query of the streaming
 * socket (`model`, `encoding`, `sample_rate`, `container`, `speed`; docs/deepgram.md), answered with
 * the audio: raw samples (`container=none`, Deepgram's default for these encodings) or a WAV file.
 * The synthesis is the one every speech route runs (speechRequest, runtime.infer), its audio
 * converted as the engine makes it.
 */
import { type Static, Type } from '@sinclair/typebox';
import { invalidField, showValue, VoxdError } from '../../errors.js';
import { SpeakAudio, speakWavHeader } from '../deepgram/speak/audio-out.js';
import { speakContentType } from '../deepgram/speak/format.js';
import { speakPlan } from '../deepgram/speak/plan.js';
import { jsonRoute } from '../request/schema.js';
import type { Reply, Route, RouteContext } from '../transport/route.js';

const SpeakBody = Type.Object(
  { text: Type.String({ description: 'The text to speak.' }) },
  { title: 'DeepgramSpeakRequest', additionalProperties: true },
);

const text = (description: string) => Type.Optional(Type.String({ description }));

const SpeakQuery = Type.Object(
  {
    model: text(
      'A voxd speech model id or alias, or a Deepgram voice name (aura-2-thalia-en, ...), which stands for deepgram_speak_model speaking with deepgram_speak_voice.',
    ),
    encoding: text('linear16 (default), mulaw or alaw.'),
    sample_rate: text(
      'linear16: 8000, 16000, 24000 (default), 32000 or 48000; mulaw and alaw: 8000 (default) or 16000.',
    ),
    container: text('none (default: the raw samples) or wav.'),
    speed: text('0.7..1.5, passed to models that take a speed.'),
    bit_rate: text('Accepted and ignored (it applies to compressed encodings only).'),
    mip_opt_out: text('Accepted and ignored (voxd keeps nothing).'),
    tag: text('Accepted and ignored.'),
  },
  { title: 'DeepgramSpeakQuery', additionalProperties: true },
);

async function speak(ctx: RouteContext, body: Static<typeof SpeakBody>): Promise<Reply> {
  const query = ctx.url.searchParams;
  if (query.has('callback'))
    throw invalidField(
      'callback',
      `callback: ${showValue(query.get('callback'))} is not supported: voxd answers in the response and calls no URL`,
    );
  if (body.text.trim() === '') throw invalidField('text', 'text: the text to speak is empty');
  const plan = await speakPlan(query, ctx, true, body.text);
  const audio = new SpeakAudio(plan.format);
  const pieces: Buffer[] = [];
  let events = 0;
  const outcome = await ctx.runtime.infer(plan.model, plan.request, {
    signal: ctx.signal,
    trace: ctx.trace,
    eventsOnly: true,
    onEvent: (event) => {
      if (event.type !== 'audio') return;
      events++;
      pieces.push(audio.write(event.audio));
    },
  });
  if (events === 0) {
    if (!outcome.result.audio)
      throw new VoxdError('E_ENGINE', `model '${plan.model}' produced no audio output`);
    pieces.push(audio.write(outcome.result.audio));
  }
  pieces.push(audio.end());
  const bytes = pieces.reduce((n, piece) => n + piece.length, 0);
  if (plan.format.wav) pieces.unshift(speakWavHeader(plan.format, bytes));
  return {
    body: pieces,
    contentType: speakContentType(plan.format),
    headers: { 'dg-model-name': plan.modelName, 'dg-char-count': String(body.text.length) },
  };
}

export const deepgramSpeakRoutes: Route[] = [
  jsonRoute({
    method: 'POST',
    path: '/v1/speak',
    scope: 'inference',
    body: SpeakBody,
    query: SpeakQuery,
    handler: speak,
  }),
];
