/**
 * `POST /v1/speak`: Deepgram's REST text to speech, as `@deepgram/sdk`'s
 * `client.speak.v1.audio.generate` calls it: a JSON body `{"text"}` and the query of the streaming
 * socket (`model`, `encoding`, `sample_rate`, `container`, `speed`; docs/deepgram.md), answered with
 * the audio: a WAV file (`container=wav`, Deepgram's REST default) or the raw samples
 * (`container=none`). The synthesis is the one every speech route runs (speechRequest,
 * runtime.infer); its audio is converted and sent as the engine makes it, from its first byte
 * (first-byte.ts), as POST /v1/audio/speech sends a plain answer.
 */
import { type Static, Type } from '@sinclair/typebox';
import type { Audio } from '../../audio/types.js';
import { invalidField, showValue, VoxdError } from '../../errors.js';
import type { InferenceOutcome } from '../../runtime/runtime.js';
import { relayAudio, SpeakAudio, speakWavHeader } from '../deepgram/speak/audio-out.js';
import { speakContentType } from '../deepgram/speak/format.js';
import { speakPlan } from '../deepgram/speak/plan.js';
import type { SpeakPlan } from '../deepgram/speak/session.js';
import { jsonRoute } from '../request/schema.js';
import { mayStreamPlain, streamFromFirstByte } from '../stream/first-byte.js';
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
    container: text('wav (default) or none (the raw samples).'),
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
  const headers = {
    'Content-Type': speakContentType(plan.format),
    'dg-model-name': plan.modelName,
    'dg-char-count': String(body.text.length),
  };
  if (mayStreamPlain(ctx.req)) return streamed(ctx, plan, headers);
  const pieces: Buffer[] = [];
  const audio = new SpeakAudio(plan.format);
  const outcome = await synthesize(ctx, plan, async (piece) => {
    pieces.push(audio.write(piece));
  });
  return whole(plan, outcome, pieces, audio, headers);
}

/** The run, each audio event the engine emits handed to `onAudio`; the result keeps no copy of it. */
function synthesize(
  ctx: RouteContext,
  plan: SpeakPlan,
  onAudio: (audio: Audio) => Promise<void>,
): Promise<InferenceOutcome> {
  return ctx.runtime.infer(plan.model, plan.request, {
    signal: ctx.signal,
    trace: ctx.trace,
    eventsOnly: true,
    onEvent: (event) => (event.type === 'audio' ? onAudio(event.audio) : undefined),
  });
}

/** The whole answer: the pieces made (none when the engine answered whole), with exact WAV sizes. */
function whole(
  plan: SpeakPlan,
  outcome: InferenceOutcome,
  pieces: Buffer[],
  audio: SpeakAudio,
  headers: Record<string, string>,
): Reply {
  if (pieces.length === 0) {
    if (!outcome.result.audio)
      throw new VoxdError('E_ENGINE', `model '${plan.model}' produced no audio output`);
    pieces.push(audio.write(outcome.result.audio));
  }
  pieces.push(audio.end());
  const bytes = pieces.reduce((n, piece) => n + piece.length, 0);
  if (plan.format.wav) pieces.unshift(speakWavHeader(plan.format, bytes));
  const { 'Content-Type': contentType, ...rest } = headers;
  return { body: pieces, contentType, headers: rest };
}

/**
 * The answer sent as it is made. A WAV's sizes are not known yet: 0xFFFFFFFF, as ffmpeg writes to
 * a pipe and POST /v1/audio/speech streams; readers take the data to the end.
 */
function streamed(ctx: RouteContext, plan: SpeakPlan, headers: Record<string, string>): Promise<Reply> {
  const audio = new SpeakAudio(plan.format);
  let events = 0;
  return streamFromFirstByte(ctx, {
    async produce(send) {
      let headed = !plan.format.wav;
      const out = async (bytes: Buffer) => {
        if (bytes.length === 0) return;
        if (!headed) {
          headed = true;
          const header = speakWavHeader(plan.format, 0);
          header.writeUInt32LE(0xffffffff, 4);
          header.writeUInt32LE(0xffffffff, header.length - 4);
          await send(header);
        }
        await send(bytes);
      };
      const outcome = await synthesize(ctx, plan, (piece) => {
        events++;
        return relayAudio(piece, audio, out);
      });
      if (events > 0) await out(audio.end());
      return outcome;
    },
    headers: () => headers,
    whole: async (outcome) => whole(plan, outcome, [], audio, headers),
    cleanup: () => {},
    onCut: (err, sent) =>
      ctx.log(
        `speak: model '${plan.model}': the answer was cut after ${sent} bytes: ${err instanceof Error ? err.message : String(err)}`,
      ),
  });
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
