/**
 * POST /v1/tasks/run, /v1/tasks/stream and /v1/tasks/batch: any task, with the CLI
 * request-sequence fields (reference §1.11-1.13).
 */

import type { Static } from '@sinclair/typebox';
import { optionalBusyTimeout, requestBusyTimeout } from '../../api/fields.js';
import { modelEntry, requireStreamingMode } from '../../api/model-lookup.js';
import { taskRequest } from '../../api/tasks/request.js';
import { timing } from '../../api/timing.js';
import type { Audio } from '../../audio/types.js';
import { encodeWav } from '../../audio/wav-encode.js';
import type { EngineEvent, EngineRequest, EngineResult } from '../../engines/types.js';
import { VoxdError } from '../../errors.js';
import type { InferenceOutcome } from '../../runtime/runtime.js';
import { audioCaller } from '../request/audio-caller.js';
import { jsonRoute } from '../request/schema.js';
import { TaskResult, TaskStreamResult } from '../schemas/audio-responses.js';
import { BusyQuery } from '../schemas/query.js';
import { TaskBatchRequest, TaskRunRequest, TaskStreamRequest } from '../schemas/task-request.js';
import { batchInference } from '../stream/batch-inference.js';
import { streamedInference } from '../stream/streamed-inference.js';
import { clientGoneOf, type Route, type RouteContext } from '../transport/route.js';

/** A field that may be null (absent). */
const given = <T>(value: T | null | undefined): T | undefined => value ?? undefined;

/**
 * The result object. Segments, turns and words count samples at the rate the input was converted
 * to; without an audio output (whose `sample_rate` it would clash with) that rate is given as
 * `sample_rate` after them, as /v1/audio/transcriptions/details gives it.
 */
function resultJson(result: EngineResult, wallMs: number, inputSampleRate?: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (result.text !== undefined) out['text'] = result.text;
  if (result.language !== undefined) out['language'] = result.language;
  if (result.audio) {
    out['audio'] = encodeWav(result.audio).toString('base64');
    out['sample_rate'] = result.audio.sampleRate;
    out['channels'] = result.audio.channels;
  }
  if (result.segments) out['segments'] = result.segments;
  if (result.speakerTurns) out['speaker_turns'] = result.speakerTurns;
  if (result.words) out['words'] = result.words;
  const positioned = result.segments || result.speakerTurns || result.words;
  if (positioned && !result.audio && inputSampleRate !== undefined) out['sample_rate'] = inputSampleRate;
  out['timing'] = timing(wallMs, result.audio);
  return out;
}

/** The engine request of a /v1/tasks/run or /v1/tasks/stream body: `{model, request?, busy_timeout_ms?}`. */
async function taskBody(ctx: RouteContext, body: Static<typeof TaskRunRequest>) {
  // The model's own id from here on, whatever alias the request used.
  const modelId = (await modelEntry(ctx.runtime, body.model)).id;
  const nested = given(body.request);
  const fields = nested ?? body;
  const request = await taskRequest(ctx.runtime, modelId, fields, nested ? 'request.' : '', audioCaller(ctx));
  const busyTimeoutMs = requestBusyTimeout(body, ctx) ?? optionalBusyTimeout(fields);
  return { modelId, request, busyTimeoutMs };
}

async function run(ctx: RouteContext, body: Static<typeof TaskRunRequest>) {
  const { modelId, request, busyTimeoutMs } = await taskBody(ctx, body);
  const outcome = await ctx.runtime.infer(modelId, request, {
    busyTimeoutMs,
    signal: clientGoneOf(ctx),
    trace: ctx.trace,
  });
  return { json: resultJson(outcome.result, outcome.wallMs, outcome.inputSampleRate) };
}

/** One event of /v1/tasks/stream, from one engine event. */
function streamEvent(event: EngineEvent, language: string | undefined): Record<string, unknown> {
  if (event.type === 'text')
    return { partial_text: { text: event.delta, ...(language ? { language } : {}) }, is_final: false };
  if (event.type === 'audio') return { audio: encodeWav(event.audio).toString('base64'), is_final: false };
  return { speaker_turns: event.turns, is_final: false };
}

/** The final event and result of a streamed task; a run that produced nothing is a fault. */
function streamResult(modelId: string, outcome: InferenceOutcome, ttftMs: number | null) {
  const { result } = outcome;
  const silentDiarization = result.speakerTurns !== undefined && result.speakerTurns.length === 0;
  if (ttftMs === null && !silentDiarization)
    throw new VoxdError('E_ENGINE', `model '${modelId}': streaming response produced no TTFT event`);
  const { timing: _wall, ...rest } = resultJson(result, outcome.wallMs, outcome.inputSampleRate);
  return { ...rest, timing: { ttft_ms: ttftMs } };
}

/**
 * POST /v1/tasks/stream: the run's events and its result. By default one JSON body once the run
 * finished, `{events, result}`; with `stream_format: "sse"`, `task.stream.event` events as they
 * happen, then `task.stream.done` with the result.
 */
async function stream(ctx: RouteContext, body: Static<typeof TaskStreamRequest>) {
  const { modelId, request, busyTimeoutMs } = await taskBody(ctx, body);
  requireStreamingMode(ctx.runtime.get(modelId).config);
  if (body.stream_format !== 'sse') {
    const events: Record<string, unknown>[] = [];
    const started = performance.now();
    let firstMs: number | null = null;
    const outcome = await ctx.runtime.infer(modelId, request, {
      busyTimeoutMs,
      signal: clientGoneOf(ctx),
      trace: ctx.trace,
      onEvent: (event) => {
        firstMs ??= Math.round(performance.now() - started);
        events.push(streamEvent(event, request.language));
      },
    });
    const result = streamResult(
      modelId,
      outcome,
      firstMs ?? (hasOutput(outcome) ? Math.round(outcome.wallMs) : null),
    );
    return { json: { events: [...events, { ...finalEvent(outcome), is_final: true }], result } };
  }
  let firstMs: number | null = null;
  return streamedInference(ctx, {
    modelId,
    request,
    busyTimeoutMs,
    format: 'sse',
    async onEvent(event, out, sinceStartMs) {
      firstMs ??= Math.round(sinceStartMs);
      await out.event({ type: 'task.stream.event', event: streamEvent(event, request.language) });
    },
    async finish(outcome, out) {
      const result = streamResult(
        modelId,
        outcome,
        firstMs ?? (hasOutput(outcome) ? Math.round(outcome.wallMs) : null),
      );
      await out.event({ type: 'task.stream.event', event: { ...finalEvent(outcome), is_final: true } });
      await out.event({ type: 'task.stream.done', result });
    },
  });
}

/** Whether a run that emitted no events still produced something (an engine that does not stream). */
function hasOutput(outcome: InferenceOutcome): boolean {
  const { result } = outcome;
  return Boolean(
    result.text ||
      result.audio ||
      result.speakerTurns?.length ||
      result.segments?.length ||
      result.words?.length,
  );
}

/** The last event: the final text and word timings, where there are any. */
function finalEvent(outcome: InferenceOutcome): Record<string, unknown> {
  const { result } = outcome;
  const event: Record<string, unknown> = {};
  if (result.text)
    event['partial_text'] = { text: result.text, ...(result.language ? { language: result.language } : {}) };
  if (result.words) event['word_timestamps'] = result.words;
  return event;
}

/**
 * POST /v1/tasks/batch: `{model, requests: [...]}` on an offline model, each result as an SSE
 * `task.batch.result` in completion order, then `task.batch.done` with the counts and timing.
 */
async function batch(ctx: RouteContext, body: Static<typeof TaskBatchRequest>) {
  const modelId = (await modelEntry(ctx.runtime, body.model)).id;
  const items: EngineRequest[] = [];
  for (const [i, item] of body.requests.entries())
    items.push(await taskRequest(ctx.runtime, modelId, item, `requests[${i}].`, audioCaller(ctx)));
  return batchInference(ctx, {
    modelId,
    items,
    busyTimeoutMs: requestBusyTimeout(body, ctx),
    result: (index, outcome) => ({
      type: 'task.batch.result',
      index,
      result: { ...resultJson(outcome.result, outcome.wallMs, outcome.inputSampleRate), timing: null },
    }),
    failure: (index, error) => ({ type: 'task.batch.result', index, error }),
    done: ({ results, errors, wallMs, outcomes }) => {
      // Audio duration and RTF only when every request answered audio.
      const audio = outcomes.map((o) => o?.result.audio);
      const all = audio.every((a) => a !== undefined) ? (audio as Audio[]) : undefined;
      return {
        type: 'task.batch.done',
        result_count: results,
        error_count: errors,
        timing: timing(wallMs, all),
      };
    },
  });
}

export const taskRoutes: Route[] = [
  jsonRoute({
    method: 'POST',
    path: '/v1/tasks/run',
    scope: 'inference',
    body: TaskRunRequest,
    query: BusyQuery,
    response: TaskResult,
    handler: run,
  }),
  jsonRoute({
    method: 'POST',
    path: '/v1/tasks/stream',
    scope: 'inference',
    body: TaskStreamRequest,
    query: BusyQuery,
    response: TaskStreamResult,
    handler: stream,
  }),
  jsonRoute({
    method: 'POST',
    path: '/v1/tasks/batch',
    scope: 'inference',
    body: TaskBatchRequest,
    query: BusyQuery,
    handler: batch,
  }),
];
