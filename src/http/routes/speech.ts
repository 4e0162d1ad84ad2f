/** POST /v1/audio/speech: text to speech, as WAV bytes, raw PCM or JSON with base64 WAV. */
import type { Static } from '@sinclair/typebox';
import { optionalBool, requestBusyTimeout } from '../../api/fields.js';
import { liveModel, requireStreamingMode } from '../../api/model-lookup.js';
import { checkInputChars, SPEECH_TASKS, speechUsage } from '../../api/speech/input-text.js';
import {
  encodeSpeech,
  OPENAI_PCM_RATE,
  parseSpeechOutput,
  type SpeechOutput,
  SpeechStreamWriter,
  streamContentType,
} from '../../api/speech/output.js';
import { liveSpeechRequest, speechModel, speechRequest } from '../../api/speech/request.js';
import { timing, timingFor, timingHeaders } from '../../api/timing.js';
import { type Audio, durationMs } from '../../audio/types.js';
import { encodePcm16, wavHeader } from '../../audio/wav-encode.js';
import type { TaskToken } from '../../config/types.js';
import type { EngineRequest } from '../../engines/types.js';
import { invalidField, VoxdError } from '../../errors.js';
import type { InferenceOutcome } from '../../runtime/runtime.js';
import { openLiveRequest } from '../live/request.js';
import { audioCaller } from '../request/audio-caller.js';
import { jsonRoute, queryRoute } from '../request/schema.js';
import { SpeechJson } from '../schemas/audio-responses.js';
import { BusyQuery, LIVE_SPEECH_OPTIONS, LiveSpeechQuery } from '../schemas/query.js';
import { SpeechRequest } from '../schemas/speech-request.js';
import { mayStreamPlain, streamFromFirstByte } from '../stream/first-byte.js';
import { streamedInference } from '../stream/streamed-inference.js';
import { ownedCodec } from '../transport/caller.js';
import { type EventStream, STREAM_BUFFER_BYTES, type StreamFormat } from '../transport/event-stream.js';
import type { Reply, Route, RouteContext } from '../transport/route.js';

async function speech(ctx: RouteContext, body: Static<typeof SpeechRequest>) {
  const { runtime, config, signal } = ctx;
  const input = body.input;
  const entry = await speechModel(runtime, body.model, '/v1/audio/speech');
  // The model's own id from here on, whatever alias the request used.
  const modelId = entry.id;
  const stream = optionalBool(body, 'stream');
  const streaming = stream === true || (body.stream_format ?? undefined) !== undefined;
  // OpenAI's route: its raw `pcm` (whole, streamed, or in SSE deltas) is 24 kHz unless asked otherwise.
  const output = parseSpeechOutput(body, config, ctx.codec, streaming, OPENAI_PCM_RATE);
  const streamFormat = body.stream_format ?? 'sse';
  if (streaming) requireStreamingMode(entry.config);
  const request = await speechRequest(
    entry,
    {
      text: input,
      textField: 'input',
      fields: body,
      language: body.language ?? undefined,
      instructions: typeof body.instructions === 'string' ? body.instructions : undefined,
    },
    audioCaller(ctx),
  );
  const busyTimeoutMs = requestBusyTimeout(body, ctx);
  if (streaming) return streamSpeech(ctx, modelId, request, busyTimeoutMs, streamFormat, output);
  // A plain request is streamed as it is made, as OpenAI's are; `"stream": false` and the JSON
  // formats (audio.cpp's shapes) keep the whole answer with its Content-Length and timing headers,
  // as do an HTTP/1.0 client and audio.cpp's WebSocket bridge (mayStreamPlain).
  if (
    stream === undefined &&
    output.format !== 'json' &&
    output.format !== 'b64_json' &&
    mayStreamPlain(ctx.req)
  )
    return speechFromFirstByte(ctx, modelId, request, busyTimeoutMs, output);
  if (output.format === 'wav' || output.format === 'pcm') {
    const made = await speechAsMade(ctx, modelId, request, busyTimeoutMs, output);
    if (made) return made;
  }
  const outcome = await runtime.infer(modelId, request, { busyTimeoutMs, signal, trace: ctx.trace });
  const audio = outcome.result.audio;
  if (!audio) throw new VoxdError('E_ENGINE', `model '${modelId}' produced no audio output`);
  const t = timing(outcome.wallMs, audio);
  if (output.format === 'json' || output.format === 'b64_json') {
    const { body: wav } = await encodeSpeech(audio, { ...output, format: 'wav' }, ownedCodec(ctx), signal);
    const json: Static<typeof SpeechJson> = { audio: wav.toString('base64'), format: 'wav', timing: t };
    return { json };
  }
  const encoded = await encodeSpeech(audio, output, ownedCodec(ctx), signal);
  return { body: encoded.body, contentType: encoded.contentType, headers: timingHeaders(t) };
}

/** A run whose audio goes to `onAudio` as the engine makes it; the result keeps no copy of it. */
function speechEvents(
  ctx: RouteContext,
  modelId: string,
  request: EngineRequest,
  busyTimeoutMs: number | undefined,
  onAudio: (audio: Audio) => Promise<void>,
): Promise<InferenceOutcome> {
  return ctx.runtime.infer(modelId, request, {
    busyTimeoutMs,
    signal: ctx.signal,
    trace: ctx.trace,
    eventsOnly: true,
    onEvent: (event) => (event.type === 'audio' ? onAudio(event.audio) : undefined),
  });
}

/**
 * A WAV or PCM answer kept as it is made: each audio event becomes PCM16 at once (resampled piece
 * by piece for `sample_rate`), so the engine keeps no float copy of the whole (RunContext
 * eventsOnly) and nothing is joined: a long answer peaks near its own size, not six times it.
 * The answer goes out once the synthesis succeeded, with the WAV header's sizes known from the
 * sample count and a Content-Length, so a failure is still a plain error response. Undefined
 * when the engine emitted no audio events (its result is then answered whole).
 */
async function speechAsMade(
  ctx: RouteContext,
  modelId: string,
  request: EngineRequest,
  busyTimeoutMs: number | undefined,
  output: SpeechOutput,
): Promise<Reply | undefined> {
  const pieces: Buffer[] = [];
  let bytes = 0;
  let shape: { sampleRate: number; channels: number } | undefined;
  const writer = new SpeechStreamWriter(
    { format: 'pcm', sampleRate: output.sampleRate },
    ctx.codec,
    ctx.signal,
    async (pcm) => {
      pieces.push(pcm);
      bytes += pcm.length;
    },
  );
  const outcome = await speechEvents(ctx, modelId, request, busyTimeoutMs, async (audio) => {
    shape ??= { sampleRate: output.sampleRate ?? audio.sampleRate, channels: audio.channels };
    await writer.write(audio);
  });
  if (!shape) {
    if (!outcome.result.audio) throw new VoxdError('E_ENGINE', `model '${modelId}' produced no audio output`);
    const encoded = await encodeSpeech(outcome.result.audio, output, ctx.codec, ctx.signal);
    const t = timing(outcome.wallMs, outcome.result.audio);
    return { body: encoded.body, contentType: encoded.contentType, headers: timingHeaders(t) };
  }
  await writer.end();
  const { sampleRate, channels } = shape;
  const audioMs = (bytes / 2 / channels / sampleRate) * 1000;
  const t = timingFor(outcome.wallMs, audioMs);
  const header = output.format === 'wav' ? wavHeader(sampleRate, channels, bytes) : undefined;
  const contentType = header ? 'audio/wav' : 'application/octet-stream';
  // An answer the stream would write without waiting for the client anyway goes out in one write.
  if (bytes + (header?.length ?? 0) <= STREAM_BUFFER_BYTES)
    return { body: header ? [header, ...pieces] : pieces, contentType, headers: timingHeaders(t) };
  return {
    stream: {
      format: 'audio',
      run: async (out) => {
        out.start({
          'Content-Type': contentType,
          'Content-Length': String(bytes + (header?.length ?? 0)),
          ...timingHeaders(t),
        });
        if (header) await out.bytes(header);
        // Each piece is let go once written, so the answer's memory shrinks as it goes out.
        for (let piece = pieces.shift(); piece; piece = pieces.shift()) await out.bytes(piece);
        await out.done();
      },
    },
  };
}

/** The timing of an answer streamed as it is made, known at its end: sent as HTTP trailers. */
const TIMING_TRAILERS = ['X-AudioCPP-Wall-Ms', 'X-AudioCPP-Audio-Duration-Ms', 'X-AudioCPP-RTF'];

/**
 * A WAV header for a stream whose length is not known yet: RIFF and data sizes 0xFFFFFFFF, as
 * ffmpeg writes to a pipe and OpenAI sends; readers take the data to the end of the file.
 */
function streamingWavHeader(sampleRate: number, channels: number): Buffer {
  const header = wavHeader(sampleRate, channels, 0);
  header.writeUInt32LE(0xffffffff, 4);
  header.writeUInt32LE(0xffffffff, header.length - 4);
  return header;
}

/**
 * A plain request's answer, sent as it is made (first-byte.ts): each audio event the engine emits
 * (a sentence, for voxd's synthesizers) goes out as PCM16, behind a WAV header, or through the
 * encoder, while the next is made. Nothing is sent before the first byte exists, so an error
 * until then is a plain error response; the timing headers, known only at the end, come as
 * trailers. An engine that emits no audio events is answered whole, as before.
 */
function speechFromFirstByte(
  ctx: RouteContext,
  modelId: string,
  request: EngineRequest,
  busyTimeoutMs: number | undefined,
  output: SpeechOutput,
): Promise<Reply> {
  const wav = output.format === 'wav';
  let shape: { sampleRate: number; channels: number } | undefined;
  let audioMs = 0;
  let writer: SpeechStreamWriter | undefined;
  return streamFromFirstByte(ctx, {
    async produce(send) {
      let headed = !wav;
      writer = new SpeechStreamWriter(
        wav ? { format: 'pcm', sampleRate: output.sampleRate } : output,
        ownedCodec(ctx),
        ctx.signal,
        async (bytes) => {
          if (!headed) {
            headed = true;
            await send(streamingWavHeader(shape!.sampleRate, shape!.channels));
          }
          await send(bytes);
        },
      );
      const outcome = await speechEvents(ctx, modelId, request, busyTimeoutMs, async (audio) => {
        shape ??= { sampleRate: output.sampleRate ?? audio.sampleRate, channels: audio.channels };
        audioMs += durationMs(audio);
        await writer!.write(audio);
      });
      if (shape) await writer.end();
      return outcome;
    },
    headers: () => ({ 'Content-Type': wav ? 'audio/wav' : streamContentType(output.format) }),
    trailers: {
      names: TIMING_TRAILERS,
      values: (outcome) => timingHeaders(timingFor(outcome.wallMs, audioMs)),
    },
    async whole(outcome) {
      const audio = outcome.result.audio;
      if (!audio) throw new VoxdError('E_ENGINE', `model '${modelId}' produced no audio output`);
      const encoded = await encodeSpeech(audio, output, ownedCodec(ctx), ctx.signal);
      return {
        body: encoded.body,
        contentType: encoded.contentType,
        headers: timingHeaders(timing(outcome.wallMs, audio)),
      };
    },
    cleanup: () => writer?.close(),
    onCut: (err, sent) =>
      ctx.log(
        `speech: model '${modelId}': the ${output.format} stream was cut after ${sent} bytes: ${err instanceof Error ? err.message : String(err)}`,
      ),
  });
}

/**
 * Speech as it is made: `sse` sends `speech.audio.delta` events (base64 PCM16, one per audio
 * buffer the engine emits: a sentence for voxd's synthesizers), then `speech.audio.done` with the
 * time to first audio; `audio` sends the raw PCM16 bytes.
 */
function streamSpeech(
  ctx: RouteContext,
  modelId: string,
  request: EngineRequest,
  busyTimeoutMs: number | undefined,
  format: StreamFormat,
  output: SpeechOutput,
) {
  let firstMs: number | undefined;
  let stream: EventStream | undefined;
  // Encoded bytes go out as they are made: raw, or base64 in speech.audio.delta events.
  const writer = new SpeechStreamWriter(output, ownedCodec(ctx), ctx.signal, (bytes) =>
    format === 'audio'
      ? stream!.bytes(bytes)
      : stream!.event({ type: 'speech.audio.delta', audio: bytes.toString('base64') }),
  );
  return streamedInference(ctx, {
    modelId,
    request,
    busyTimeoutMs,
    format,
    headers: format === 'audio' ? { 'Content-Type': streamContentType(output.format) } : undefined,
    eventsOnly: true,
    cleanup: () => writer.close(),
    async onEvent(event, out, sinceStartMs) {
      if (event.type !== 'audio') return;
      firstMs ??= sinceStartMs;
      stream = out;
      await writer.write(event.audio);
    },
    async finish(_outcome, out) {
      if (firstMs === undefined)
        throw new VoxdError('E_ENGINE', `model '${modelId}' produced no audio delta events`);
      stream = out;
      await writer.end();
      if (format === 'sse')
        await out.event({
          type: 'speech.audio.done',
          usage: speechUsage(request.text),
          timing: { ttft_ms: Math.round(firstMs) },
        });
    },
  });
}

/** Tasks whose live speech comes from the input audio alone, without an `input` text. */
const AUDIO_DRIVEN: readonly TaskToken[] = ['s2s', 'vc', 'svc'];

/**
 * POST /v1/audio/speech/live: the text in the query, input audio as raw PCM in a chunked body
 * (read as it arrives, under the live_ingest limits), speech streamed back on the same
 * connection. voxd's synthesizers speak the text once the input has ended; `return_text` adds
 * each sentence's text before its audio. The body is opened before anything is awaited, so its
 * chunk sizes are checked from the first byte.
 */
async function speechLive(ctx: RouteContext, query: Static<typeof LiveSpeechQuery>) {
  const { runtime, config } = ctx;
  const entry = liveModel(runtime, query.model, [...SPEECH_TASKS, ...AUDIO_DRIVEN], '/v1/audio/speech/live');
  const modelId = entry.config.id;
  const { input, instructions, voice } = query;
  if (!input && !AUDIO_DRIVEN.includes(entry.config.task))
    throw invalidField('input', "input: live speech requires an 'input' query parameter (the text to speak)");
  checkInputChars(input, 'input', entry.config, config);
  const streamFormat = query.stream_format ?? 'sse';
  const returnText = query.return_text ?? false;
  if (returnText && streamFormat !== 'sse')
    throw invalidField('return_text', 'return_text: text can only be returned with stream_format sse');
  const busyTimeoutMs = query.busy_timeout_ms;
  // The body's completedAt comes from this clock: the timing below must too.
  const { clock } = runtime;
  const started = clock.now();
  const body = openLiveRequest(ctx, entry, 'live speech', query);
  const request = liveSpeechRequest(entry, {
    text: input,
    language: query.language,
    voice,
    instructions,
    options: Object.fromEntries(LIVE_SPEECH_OPTIONS.map((key) => [key, query[key]])),
    liveAudio: body,
  });
  let firstAudioAt: number | undefined;
  let text = '';
  return streamedInference(ctx, {
    modelId,
    request,
    busyTimeoutMs,
    format: streamFormat,
    headers: { Connection: 'close' },
    eventsOnly: true,
    cleanup: () => body.close(),
    async onEvent(event, out) {
      if (event.type === 'text' && returnText && event.delta) {
        text += event.delta;
        await out.event({ type: 'speech.text.delta', delta: event.delta });
      } else if (event.type === 'audio') {
        firstAudioAt ??= clock.now();
        const pcm = encodePcm16(event.audio);
        if (streamFormat === 'audio') await out.bytes(pcm);
        else await out.event({ type: 'speech.audio.delta', audio: pcm.toString('base64') });
      }
    },
    async finish(outcome, out) {
      if (firstAudioAt === undefined)
        throw new VoxdError('E_ENGINE', `model '${modelId}' produced no audio delta events`);
      if (streamFormat !== 'sse') return;
      if (returnText) {
        const full = outcome.result.text ?? text;
        if (!full) throw new VoxdError('E_ENGINE', `model '${modelId}' produced no text`);
        await out.event({ type: 'speech.text.done', text: full });
      }
      const inputEnd = body.completedAt ?? clock.now();
      const gap = firstAudioAt - inputEnd;
      await out.event({
        type: 'speech.audio.done',
        usage: speechUsage(input),
        timing: {
          // From the end of the input to the first audio; null when audio came before the input ended.
          ttft_ms: gap >= 0 ? Math.round(gap) : null,
          first_audio_before_input_end: gap < 0,
          request_start_to_first_audio_ms: Math.round(firstAudioAt - started),
          input_end_ms: Math.round(inputEnd - started),
          overlap_ms: gap < 0 ? Math.round(-gap) : 0,
        },
      });
    },
  });
}

export const speechRoutes: Route[] = [
  jsonRoute({
    method: 'POST',
    path: '/v1/audio/speech',
    scope: 'inference',
    body: SpeechRequest,
    query: BusyQuery,
    response: SpeechJson,
    handler: speech,
  }),
  queryRoute({
    method: 'POST',
    path: '/v1/audio/speech/live',
    scope: 'inference',
    query: LiveSpeechQuery,
    handler: speechLive,
  }),
];
