/**
 * `POST /v1/listen`: Deepgram's prerecorded transcription, as `@deepgram/sdk`'s
 * `client.listen.v1.media.transcribeFile` and `transcribeUrl` call it. The body is the audio
 * (any format voxd decodes, as an upload to /v1/audio/transcriptions; raw samples when the query
 * names `encoding` and `sample_rate`), or JSON `{"url"}` naming a server-side file, confined to
 * `file_roots` as every server-side input is (voxd fetches no remote URL). The answer is
 * Deepgram's shape (deepgram/listen/prerecorded.ts); the query is the socket's (docs/deepgram.md).
 */
import { createHash } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { audioLimits } from '../../api/audio-limits.js';
import { requireTask } from '../../api/model-lookup.js';
import { transcriptionRequest } from '../../api/transcription/engine-request.js';
import { type AudioLimits, decodeAudio, readAudioPath } from '../../audio/input.js';
import { decodeG711, decodePcmMono } from '../../audio/pcm.js';
import { type Audio, frameCount } from '../../audio/types.js';
import { invalidField, showValue, VoxdError } from '../../errors.js';
import { fileAccessOf } from '../../util/server-files.js';
import { type PrerecordedOptions, prerecordedOptions } from '../deepgram/listen/options.js';
import { prerecordedAnswer } from '../deepgram/listen/prerecorded.js';
import { deepgramModel } from '../deepgram/model-name.js';
import type { Encoding } from '../realtime/audio-format.js';
import { audioCaller } from '../request/audio-caller.js';
import { readBody, readJsonObject } from '../request/body.js';
import { queryRoute } from '../request/schema.js';
import { clientGoneOf, type Reply, type Route, type RouteContext } from '../transport/route.js';

const text = (description: string) => Type.Optional(Type.String({ description }));

const ListenQuery = Type.Object(
  {
    model: text(
      'A voxd speech recognition model id or alias, or a Deepgram model name (nova-3, ...), which stands for deepgram_listen_model.',
    ),
    encoding: text(
      'linear16, mulaw or alaw: the body is raw samples (sample_rate then required); left out, a file in any format voxd decodes.',
    ),
    sample_rate: text("The raw samples' rate (1000..384000)."),
    channels: text("The raw samples' channels (1..8), mixed down to one."),
    utterances: text('true: the answer has results.utterances too.'),
    utt_split: text('Seconds of pause that split two utterances (default 0.8).'),
  },
  { additionalProperties: true },
);

const Word = Type.Object(
  {
    word: Type.String(),
    start: Type.Number({ description: 'Seconds from the start of the audio.' }),
    end: Type.Number(),
    confidence: Type.Number(),
    punctuated_word: Type.String(),
  },
  { additionalProperties: true },
);

/** Deepgram's prerecorded answer (ListenV1Response), as far as voxd fills it. */
const ListenResponse = Type.Object(
  {
    metadata: Type.Object(
      {
        request_id: Type.String(),
        sha256: Type.String(),
        created: Type.String(),
        duration: Type.Number({ description: 'Seconds of audio.' }),
        channels: Type.Integer(),
        models: Type.Array(Type.String()),
        model_info: Type.Record(Type.String(), Type.Unknown()),
      },
      { additionalProperties: true },
    ),
    results: Type.Object(
      {
        channels: Type.Array(
          Type.Object({
            alternatives: Type.Array(
              Type.Object({ transcript: Type.String(), confidence: Type.Number(), words: Type.Array(Word) }),
            ),
          }),
        ),
        utterances: Type.Optional(
          Type.Array(
            Type.Object(
              {
                start: Type.Number(),
                end: Type.Number(),
                confidence: Type.Number(),
                channel: Type.Integer(),
                transcript: Type.String(),
                words: Type.Array(Word),
                id: Type.String(),
              },
              { additionalProperties: true },
            ),
            { description: 'With utterances=true: the words cut at pauses longer than utt_split.' },
          ),
        ),
      },
      { additionalProperties: true },
    ),
  },
  { title: 'DeepgramListenResponse', additionalProperties: true },
);

const isJson = (ctx: RouteContext) => /^application\/json\b/i.test(ctx.req.headers['content-type'] ?? '');

async function listen(ctx: RouteContext): Promise<Reply> {
  const options = prerecordedOptions(ctx.url.searchParams);
  // A JSON body's fields are checked before the model is looked up, as every JSON route's are.
  const path = isJson(ctx) ? serverPath(await readJsonObject(ctx)) : undefined;
  const { entry } = await deepgramModel(ctx.runtime, ctx.config, options.model, 'listen');
  requireTask(entry.config, ['asr'], '/v1/listen');
  // A full queue refuses before the audio is read (admission checks again: it may fill meanwhile).
  ctx.runtime.checkQueueRoom(entry.id);
  const limits = audioLimits(audioCaller(ctx), entry.config);
  const hash = createHash('sha256');
  let audio: Audio;
  if (path === undefined) audio = await fromBody(ctx, options, limits, hash);
  else {
    hash.update(path);
    audio = await readAudioPath(path, 'url', fileAccessOf(ctx.config), limits);
  }
  const outcome = await ctx.runtime.infer(entry.id, transcriptionRequest(entry, {}, { audio }), {
    signal: clientGoneOf(ctx),
    trace: ctx.trace,
  });
  const seconds = frameCount(audio) / audio.sampleRate;
  const json = prerecordedAnswer(entry, outcome, { seconds, sha256: hash.digest('hex') }, options);
  return { json, headers: { 'dg-request-id': json.metadata.request_id, 'dg-model-name': entry.id } };
}

/** `{"url"}`: a server-side file (a path or a file: URL), to be opened under file_roots. */
function serverPath(body: Record<string, unknown>): string {
  const url = body['url'];
  if (typeof url !== 'string' || url === '')
    throw invalidField(
      'url',
      `url: ${showValue(url ?? null)} is invalid; expected the audio's server-side path or file: URL`,
    );
  if (/^[a-z][a-z0-9+.-]*:/i.test(url) && !url.startsWith('file:'))
    throw invalidField(
      'url',
      `url: ${showValue(url)} is not a server-side file; voxd fetches no remote URL: send the audio as the request body`,
    );
  try {
    return url.startsWith('file:') ? decodeURIComponent(new URL(url).pathname) : url;
  } catch {
    throw invalidField('url', `url: ${showValue(url)} is not a valid file: URL`);
  }
}

/** The body: raw samples when the query names their encoding, else a file decoded as an upload is. */
async function fromBody(
  ctx: RouteContext,
  options: PrerecordedOptions,
  limits: AudioLimits,
  hash: ReturnType<typeof createHash>,
): Promise<Audio> {
  const bytes = await readBody(ctx.req, ctx.config.max_request_body_bytes, ctx.config.body_timeout_ms);
  if (bytes.length === 0) throw invalidField('body', 'body: empty; send the audio as the request body');
  hash.update(bytes);
  if (!options.encoding) return decodeAudio({ bytes, owned: true }, 'body', limits);
  const audio: Audio = {
    samples: rawMono(bytes, options.encoding, options.channels),
    sampleRate: options.sampleRate,
    channels: 1,
  };
  const seconds = frameCount(audio) / audio.sampleRate;
  if (limits.maxSeconds > 0 && seconds > limits.maxSeconds)
    throw new VoxdError(
      'E_AUDIO_TOO_LONG',
      `body: ${seconds.toFixed(1)} s of audio; the limit is ${limits.maxSeconds} s (max_audio_seconds)`,
      {
        param: 'body',
      },
    );
  return audio;
}

/** Raw samples mixed down to one channel. */
function rawMono(bytes: Buffer, encoding: Encoding, channels: number): Float32Array {
  if (encoding === 'pcm16') return decodePcmMono(bytes, { bits: 16, float: false, channels });
  const all = decodeG711(bytes, encoding === 'g711_ulaw' ? 'ulaw' : 'alaw');
  if (channels === 1) return all;
  const out = new Float32Array(Math.floor(all.length / channels));
  for (let f = 0; f < out.length; f++) {
    let sum = 0;
    for (let c = 0; c < channels; c++) sum += all[f * channels + c]!;
    out[f] = sum / channels;
  }
  return out;
}

export const deepgramListenRoutes: Route[] = [
  queryRoute({
    method: 'POST',
    path: '/v1/listen',
    scope: 'inference',
    query: ListenQuery,
    response: ListenResponse,
    handler: listen,
  }),
];
