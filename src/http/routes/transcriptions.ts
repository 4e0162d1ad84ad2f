/**
 * POST /v1/audio/transcriptions (plain or streamed), /v1/audio/translations and
 * /v1/audio/transcriptions/details: speech recognition, translation and diarization of a WAV, sent
 * either as a multipart upload or as JSON naming a server-local path.
 */

import type { Static } from '@sinclair/typebox';
import { audioLimits } from '../../api/audio-limits.js';
import { requestBusyTimeout } from '../../api/fields.js';
import { liveModel, modelEntry, requireStreamingMode, requireTask } from '../../api/model-lookup.js';
import { timing } from '../../api/timing.js';
import { requireChunkingVad, runChunked } from '../../api/transcription/chunked.js';
import { diarizeWithText } from '../../api/transcription/diarized-text.js';
import { type TranscriptionAsk, transcriptionRequest } from '../../api/transcription/engine-request.js';
import { audioSeconds, durationUsage, timedReply, transcriptJson } from '../../api/transcription/formats.js';
import { parseTranscriptRequest, type TranscriptRequest } from '../../api/transcription/request.js';
import { type AudioLimits, decodeAudio, readAudioPath } from '../../audio/input.js';
import type { Audio } from '../../audio/types.js';
import type { TaskToken } from '../../config/types.js';
import type { EngineRequest } from '../../engines/types.js';
import { invalidField, invalidRequest, showValue, VoxdError } from '../../errors.js';
import type { InferenceOutcome } from '../../runtime/runtime.js';
import { fileAccessOf } from '../../util/server-files.js';
import type { LiveBody } from '../live/body.js';
import { openLiveRequest } from '../live/request.js';
import { audioCaller } from '../request/audio-caller.js';
import { readJsonObject } from '../request/body.js';
import { isMultipart, type MultipartBody, readMultipart } from '../request/multipart.js';
import { formChecker, queryRoute, textBodyChecker } from '../request/schema.js';
import { Transcription, TranscriptionDetails } from '../schemas/audio-responses.js';
import { BusyQuery, LiveTranscriptionQuery } from '../schemas/query.js';
import {
  BatchTranscriptionForm,
  TranscriptionForm,
  TranscriptionJsonRequest,
} from '../schemas/transcription-request.js';
import { batchInference } from '../stream/batch-inference.js';
import { streamedInference } from '../stream/streamed-inference.js';
import { clientGoneOf, type Route, type RouteContext } from '../transport/route.js';

const TRANSCRIPTION_TASKS: readonly TaskToken[] = ['asr', 'diar'];

/** The fields of the JSON body or the form, as their schemas passed them. */
type Fields = Static<typeof TranscriptionJsonRequest> | Static<typeof TranscriptionForm>;

/** The request's fields and its audio, not decoded yet (the model's limits apply to decoding). */
interface TranscriptionInput {
  fields: Fields;
  decode(limits: AudioLimits): Promise<Audio>;
}

/** Reads a multipart body and hands it to `use`; its spooled files are removed whatever happens. */
async function withMultipart<T>(ctx: RouteContext, use: (body: MultipartBody) => Promise<T>): Promise<T> {
  const body = await readMultipart(ctx.req, {
    limit: ctx.config.max_request_body_bytes,
    idleMs: ctx.config.body_timeout_ms,
  });
  ctx.trace?.bodyRead();
  try {
    return await use(body);
  } finally {
    await body.dispose();
  }
}

/** The context text: audio.cpp's `text`, else OpenAI's `prompt`. */
function contextText(fields: Pick<Fields, 'text' | 'prompt'>): string | undefined {
  return fields.text ?? fields.prompt ?? undefined;
}

/** What a transcription's fields ask of its model (engine-request.ts builds the request from it). */
function transcriptionAsk(
  fields: Pick<Fields, 'text' | 'prompt' | 'language' | 'options'>,
): TranscriptionAsk {
  const language = fields.language ?? undefined;
  return { language, prompt: contextText(fields), options: fields['options'] };
}

const checkTranscriptionForm = formChecker(TranscriptionForm);

function fromMultipart(body: MultipartBody): TranscriptionInput {
  const fields = checkTranscriptionForm(body);
  // The form's schema asked for the part; of repeated ones, the first is the audio.
  const file = body.files.find((f) => f.field === 'file')!;
  if (file.size === 0) throw invalidField('file', `file: ${showValue(file.filename)} is empty`);
  return { fields, decode: (limits) => decodeAudio(file.source, 'file', limits) };
}

const checkTranscriptionJson = textBodyChecker(TranscriptionJsonRequest);

async function fromJson(ctx: RouteContext): Promise<TranscriptionInput> {
  const body = checkTranscriptionJson(await readJsonObject(ctx));
  const key = (['audio', 'audio_path', 'file'] as const).find(
    (k) => body[k] !== undefined && body[k] !== null,
  );
  if (!key)
    throw invalidField(
      'audio',
      `'audio' is required: expected a server-local WAV path in "audio", "audio_path" or "file"`,
    );
  const path = body[key]!;
  if (path === '') throw invalidField(key, `${key}: "" is invalid; expected a non-empty string`);
  return {
    fields: body,
    decode: (limits) => readAudioPath(path, key, fileAccessOf(ctx.config), limits),
  };
}

interface ParsedTranscription {
  modelId: string;
  request: EngineRequest;
  audio: Audio;
  fields: Fields;
  stream: boolean;
  busyTimeoutMs: number | undefined;
  /** The OpenAI response fields (response_format, timestamp_granularities, temperature). */
  transcript: TranscriptRequest;
}

/** The request forms the transcription and translation routes share (multipart upload, or JSON with a path). */
function parse(ctx: RouteContext, route: string, translation = false): Promise<ParsedTranscription> {
  if (isMultipart(ctx.req))
    return withMultipart(ctx, (body) => parseInput(ctx, route, fromMultipart(body), translation));
  return fromJson(ctx).then((input) => parseInput(ctx, route, input, translation));
}

/** Only Whisper translates (its `task` option); any other model is named in a 400. */
function requireTranslation(config: { id: string; family: string }): void {
  if (config.family !== 'whisper_asr')
    throw invalidField(
      'model',
      `model: '${config.id}' cannot translate: it is a ${config.family} model, and only whisper_asr models translate (into English)`,
    );
}

/** Fields are checked before the audio is decoded, so a bad request costs no decoding. */
async function parseInput(
  ctx: RouteContext,
  route: string,
  { fields, decode }: TranscriptionInput,
  translation: boolean,
): Promise<ParsedTranscription> {
  const entry = await modelEntry(ctx.runtime, fields.model);
  // The model's own id from here on, whatever alias the request used.
  const modelId = entry.id;
  requireTask(entry.config, translation ? ['asr'] : TRANSCRIPTION_TASKS, route);
  if (translation) requireTranslation(entry.config);
  const stream = fields.stream === true;
  const diarization = entry.config.task === 'diar';
  const transcript = parseTranscriptRequest(fields, { id: modelId, diarization }, translation);
  if (transcript.chunking) requireChunkingVad(ctx);
  const ask = { ...transcriptionAsk(fields), translate: translation, temperature: transcript.temperature };
  const unheard = transcriptionRequest(entry, ask);
  const busyTimeoutMs = requestBusyTimeout(fields, ctx);
  // A full queue refuses before the audio is decoded (admission checks again: the queue may fill meanwhile).
  ctx.runtime.checkQueueRoom(modelId);
  const audio = await decode(audioLimits(audioCaller(ctx), entry.config));
  return {
    modelId,
    request: { ...unheard, audio },
    audio,
    fields,
    stream,
    busyTimeoutMs,
    transcript,
  };
}

/** text, language, segments, speaker_turns, words, each when present, and the rate positions count in. */
function detailJson(outcome: InferenceOutcome): Record<string, unknown> {
  const { result } = outcome;
  const json: Record<string, unknown> = { text: result.text ?? '' };
  if (result.language) json['language'] = result.language;
  const arrays = { segments: result.segments, speaker_turns: result.speakerTurns, words: result.words };
  let positioned = false;
  for (const [key, value] of Object.entries(arrays)) {
    if (value === undefined) continue;
    json[key] = value;
    positioned = true;
  }
  if (positioned) json['sample_rate'] = outcome.inputSampleRate;
  return json;
}

async function transcriptions(ctx: RouteContext) {
  const parsed = await parse(ctx, '/v1/audio/transcriptions');
  if (parsed.stream) {
    requireStreamingMode(ctx.runtime.get(parsed.modelId).config);
    return streamTranscription(ctx, parsed.modelId, parsed.request, parsed.busyTimeoutMs);
  }
  return answer(ctx, parsed, 'transcribe');
}

/** POST /v1/audio/translations: OpenAI's translation into English, on Whisper models. */
async function translations(ctx: RouteContext) {
  const parsed = await parse(ctx, '/v1/audio/translations', true);
  if (parsed.stream) throw invalidField('stream', 'stream: /v1/audio/translations does not stream');
  return answer(ctx, parsed, 'translate');
}

/**
 * One run of the model, or with chunking_strategy one per chunk of the audio, joined; a diarizer's
 * run goes with a recogniser's for its text (diarized-text.ts).
 */
function infer(ctx: RouteContext, parsed: ParsedTranscription): Promise<InferenceOutcome> {
  const { modelId, request, audio, busyTimeoutMs } = parsed;
  const chunking = parsed.transcript.chunking;
  if (chunking) return runChunked(ctx, modelId, { ...request, audio }, chunking, busyTimeoutMs);
  const run = (id: string, req: EngineRequest) =>
    ctx.runtime.infer(id, req, { busyTimeoutMs, signal: clientGoneOf(ctx), trace: ctx.trace });
  if (request.task === 'diar') return diarizeWithText(ctx.runtime, modelId, request, run);
  return run(modelId, request);
}

/** Runs a parsed transcription or translation and answers in its response_format. */
async function answer(ctx: RouteContext, parsed: ParsedTranscription, task: 'transcribe' | 'translate') {
  const { modelId, audio, transcript } = parsed;
  const format = transcript.format;
  const outcome = await infer(ctx, parsed);
  const timed = { outcome, audio, request: transcript, task, language: parsed.request.language };
  // A diarizer may give turns and no text; diarized_json has room for that.
  if (format === 'diarized_json') return timedReply(timed);
  const text = outcome.result.text;
  if (text === undefined) throw new VoxdError('E_ENGINE', `model '${modelId}' produced no text`);
  if (format === 'text') return { body: Buffer.from(text, 'utf8'), contentType: 'text/plain; charset=utf-8' };
  if (format !== 'json') return timedReply(timed);
  const json: Record<string, unknown> = transcriptJson(timed);
  const turns = outcome.result.speakerTurns;
  if (turns) {
    json['speaker_turns'] = turns;
    json['sample_rate'] = outcome.inputSampleRate;
  }
  json['timing'] = timing(outcome.wallMs, audio);
  return { json };
}

/**
 * POST /v1/audio/transcriptions/details: the text with every detail the engine gives (language,
 * segments, speaker turns, words) and the sample rate their positions count in.
 */
async function details(ctx: RouteContext) {
  const parsed = await parse(ctx, '/v1/audio/transcriptions/details');
  if (parsed.stream)
    throw invalidField(
      'stream',
      'stream: /v1/audio/transcriptions/details does not stream; use /v1/audio/transcriptions',
    );
  const { modelId, audio } = parsed;
  const outcome = await infer(ctx, parsed);
  const diarization = ctx.runtime.get(modelId).config.task === 'diar';
  if (outcome.result.text === undefined && !diarization)
    throw new VoxdError('E_ENGINE', `model '${modelId}' produced no text`);
  const json = detailJson(outcome);
  json['timing'] = timing(outcome.wallMs, audio);
  return { json };
}

/**
 * `stream=true`: `transcript.text.delta` events as the engine emits text (an engine that emits
 * none sends its whole text as one delta at the end), then `transcript.text.done`; diarization
 * models send `diarization.delta` with the turns closed so far, then `diarization.done`.
 */
function streamTranscription(
  ctx: RouteContext,
  modelId: string,
  request: EngineRequest,
  busyTimeoutMs: number | undefined,
  live?: { body: LiveBody },
) {
  /** How long the input was: the upload's, or all that the live body brought. */
  const inputSeconds = () =>
    live ? liveSeconds(live.body) : request.audio ? audioSeconds(request.audio) : 0;
  const diarization = ctx.runtime.get(modelId).config.task === 'diar';
  let firstMs: number | undefined;
  let streamedText = '';
  let streamedTurns = 0;
  return streamedInference(ctx, {
    modelId,
    request,
    busyTimeoutMs,
    format: 'sse',
    // After a live body fails, node:http would otherwise read the rest of it to keep the connection.
    ...(live ? { headers: { Connection: 'close' }, cleanup: () => live.body.close() } : {}),
    async onEvent(event, out, sinceStartMs) {
      if (event.type === 'text' && event.delta && !diarization) {
        firstMs ??= sinceStartMs;
        streamedText += event.delta;
        await out.event({ type: 'transcript.text.delta', delta: event.delta });
      } else if (event.type === 'turns' && event.turns.length > 0 && diarization) {
        firstMs ??= sinceStartMs;
        streamedTurns += event.turns.length;
        await out.event({
          type: 'diarization.delta',
          speaker_turns: event.turns,
          sample_rate: event.sampleRate,
        });
      }
    },
    async finish(outcome, out) {
      const ttft = firstMs === undefined ? null : Math.round(firstMs);
      if (diarization) {
        const sampleRate = outcome.inputSampleRate;
        const turns = outcome.result.speakerTurns ?? [];
        const rest = turns.slice(streamedTurns);
        if (rest.length > 0)
          await out.event({ type: 'diarization.delta', speaker_turns: rest, sample_rate: sampleRate });
        const timingMs = ttft ?? (turns.length > 0 ? Math.round(outcome.wallMs) : null);
        await out.event({
          type: 'diarization.done',
          speaker_turns: turns,
          sample_rate: sampleRate,
          timing: { ttft_ms: timingMs },
        });
        return;
      }
      const text = outcome.result.text;
      if (text === undefined) throw new VoxdError('E_ENGINE', `model '${modelId}' produced no text`);
      let ttftMs = ttft;
      if (streamedText === '' && text !== '') {
        await out.event({ type: 'transcript.text.delta', delta: text });
        ttftMs = Math.round(outcome.wallMs);
      }
      await out.event({
        type: 'transcript.text.done',
        text,
        usage: durationUsage(inputSeconds()),
        timing: { ttft_ms: ttftMs },
      });
    },
  });
}

/** Seconds of audio a live body brought, from its byte count and declared format. */
function liveSeconds(body: LiveBody): number {
  const { sampleRate, channels, sampleFormat } = body.format;
  const bytesPerSample = sampleFormat === 'f32le' ? 4 : 2;
  return body.bytesReceived / bytesPerSample / channels / sampleRate;
}

/**
 * POST /v1/batches/transcriptions: several uploaded WAVs (repeated `file` fields) on an offline
 * model, each transcript as an SSE `batch.transcription.result` in completion order, then
 * `batch.transcription.done` with the count and the summed audio duration.
 */
async function batchTranscriptions(ctx: RouteContext) {
  if (!isMultipart(ctx.req))
    throw invalidRequest(
      '/v1/batches/transcriptions takes a multipart/form-data upload with one or more "file" fields',
    );
  return withMultipart(ctx, (body) => batchOf(ctx, body));
}

const checkBatchForm = formChecker(BatchTranscriptionForm);

async function batchOf(ctx: RouteContext, body: MultipartBody) {
  const plain = checkBatchForm(body);
  const entry = await modelEntry(ctx.runtime, plain.model);
  const modelId = entry.id;
  requireTask(entry.config, TRANSCRIPTION_TASKS, '/v1/batches/transcriptions');
  const uploads = body.files.filter((f) => f.field === 'file');
  const unheard = transcriptionRequest(entry, transcriptionAsk(plain));
  const limits = audioLimits(audioCaller(ctx), entry.config);
  const audios: Audio[] = [];
  for (const [i, file] of uploads.entries()) {
    if (file.size === 0) throw invalidField(`file[${i}]`, `file[${i}]: ${showValue(file.filename)} is empty`);
    audios.push(await decodeAudio(file.source, `file[${i}]`, limits));
  }
  return batchInference(ctx, {
    modelId,
    items: audios.map((audio) => ({ ...unheard, audio })),
    busyTimeoutMs: requestBusyTimeout(plain, ctx),
    result: (index, outcome) => ({
      type: 'batch.transcription.result',
      index,
      filename: uploads[index]!.filename,
      ...detailJson(outcome),
    }),
    failure: (index, error) => ({
      type: 'batch.transcription.result',
      index,
      filename: uploads[index]!.filename,
      error,
    }),
    done: ({ results, errors, wallMs }) => ({
      type: 'batch.transcription.done',
      result_count: results,
      error_count: errors,
      timing: timing(wallMs, audios),
    }),
  });
}

/**
 * POST /v1/audio/transcriptions/live: raw PCM in a chunked request body (format from the query),
 * transcribed as it arrives, answered with the same SSE events as a streamed transcription. The
 * body is opened before anything is awaited, so its chunk sizes are checked from the first byte.
 */
async function transcriptionsLive(ctx: RouteContext, query: Static<typeof LiveTranscriptionQuery>) {
  const entry = liveModel(ctx.runtime, query.model, TRANSCRIPTION_TASKS, '/v1/audio/transcriptions/live');
  const modelId = entry.config.id;
  const busyTimeoutMs = query.busy_timeout_ms;
  const body = openLiveRequest(ctx, entry, 'live transcription', query);
  const ask = { language: query.language || undefined, prompt: query.prompt };
  const request = transcriptionRequest(entry, ask, { liveAudio: body });
  return streamTranscription(ctx, modelId, request, busyTimeoutMs, { body });
}

export const transcriptionRoutes: Route[] = [
  ...(
    [
      ['/v1/audio/transcriptions', transcriptions, Transcription],
      ['/v1/audio/transcriptions/details', details, TranscriptionDetails],
      ['/v1/audio/translations', translations, Transcription],
    ] as const
  ).map(([path, handler, response]) =>
    queryRoute({
      method: 'POST',
      path,
      scope: 'inference',
      query: BusyQuery,
      handler,
      body: TranscriptionJsonRequest,
      form: TranscriptionForm,
      response,
    }),
  ),
  queryRoute({
    method: 'POST',
    path: '/v1/batches/transcriptions',
    scope: 'inference',
    query: BusyQuery,
    handler: batchTranscriptions,
    form: BatchTranscriptionForm,
  }),
  queryRoute({
    method: 'POST',
    path: '/v1/audio/transcriptions/live',
    scope: 'inference',
    query: LiveTranscriptionQuery,
    handler: transcriptionsLive,
  }),
];
