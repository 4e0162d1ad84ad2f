/**
 * A transcription's `chunking_strategy`: long audio is cut at silences found by a silero VAD model
 * (the server's `chunking_vad_model`), each chunk is transcribed as its own run of the requested
 * model, one after another (so a request holds one slot at a time), and the results are joined
 * with their positions shifted by each chunk's offset, so timestamps count from the file's start.
 */
import { sliceAudio } from '../../audio/pcm16-audio.js';
import type { Audio } from '../../audio/types.js';
import type { ServerConfig } from '../../config/types.js';
import type { EngineRequest, EngineResult, Segment, Word } from '../../engines/types.js';
import type { RequestTrace } from '../../observability/request-trace.js';
import type { InferenceOutcome, Runtime } from '../../runtime/runtime.js';
import { requireVadModel, vadRequest } from '../vad/vad-model.js';
import type { ChunkingStrategy } from './chunking.js';
import { audioSeconds, textSegments } from './formats.js';

/** What a chunked transcription needs of its caller: the runtime, the config and the caller's abort. */
export interface ChunkingContext {
  runtime: Runtime;
  config: ServerConfig;
  signal: AbortSignal;
  /** The request's trace, told each run's model and times (its log line). */
  trace?: RequestTrace;
}

/** A span of the input, in seconds. */
export interface Span {
  start: number;
  end: number;
}

/**
 * The chunks to transcribe: speech regions merged while the chunk (padding included) stays within
 * the maximum, each padded by the prefix padding but never past the middle of the silence it
 * shares with a neighbour. Audio within the maximum, or with fewer than two chunks' worth of
 * speech regions, is one chunk: the whole file.
 */
export function planChunks(speech: readonly Span[], duration: number, strategy: ChunkingStrategy): Span[] {
  const whole = [{ start: 0, end: duration }];
  const max = strategy.maxChunkMs / 1000;
  const pad = strategy.prefixPaddingMs / 1000;
  if (duration <= max || speech.length === 0) return whole;
  const groups: Span[] = [];
  for (const region of speech) {
    const last = groups.at(-1);
    if (last && region.end - last.start + 2 * pad <= max) last.end = region.end;
    else groups.push({ ...region });
  }
  if (groups.length < 2) return whole;
  return groups.map((g, i) => {
    const before = groups[i - 1];
    const after = groups[i + 1];
    return {
      start: Math.max(0, g.start - pad, before ? (before.end + g.start) / 2 : 0),
      end: Math.min(duration, g.end + pad, after ? (g.end + after.start) / 2 : duration),
    };
  });
}

/** The frames of `audio` within `span`. */
function slice(audio: Audio, span: Span): Audio {
  const from = Math.round(span.start * audio.sampleRate) * audio.channels;
  const to = Math.round(span.end * audio.sampleRate) * audio.channels;
  return sliceAudio(audio, from, to);
}

/** The server's VAD model, checked before the audio is decoded so a server that cannot chunk says so at once. */
export const requireChunkingVad = (ctx: ChunkingContext): string =>
  requireVadModel(ctx.runtime, ctx.config, 'chunking_strategy');

/** Speech regions of the audio, in seconds, from the configured VAD model. */
async function speechRegions(
  ctx: ChunkingContext,
  audio: Audio,
  strategy: ChunkingStrategy,
  busyTimeoutMs: number | undefined,
): Promise<Span[]> {
  const vadId = requireChunkingVad(ctx);
  const request = vadRequest(audio, strategy.threshold, strategy.silenceDurationMs);
  const outcome = await ctx.runtime.infer(vadId, request, {
    busyTimeoutMs,
    signal: ctx.signal,
    trace: ctx.trace,
  });
  const rate = outcome.inputSampleRate;
  return (outcome.result.segments ?? []).map((s) => ({
    start: s.start_sample / rate,
    end: s.end_sample / rate,
  }));
}

/** One chunk's outcome with its positions moved by `offset` seconds. */
function shifted(outcome: InferenceOutcome, span: Span): { segments: Segment[]; words: Word[] } {
  const rate = outcome.inputSampleRate;
  const by = Math.round(span.start * rate);
  // The engine's segments, or ones built from its words, or its text over the whole chunk.
  const segments = textSegments(outcome, span.end - span.start).map((s) => ({
    start_sample: by + Math.round(s.start * rate),
    end_sample: by + Math.round(s.end * rate),
    confidence: s.confidence,
    text: s.text,
  }));
  const words = (outcome.result.words ?? []).map((w) => ({
    ...w,
    start_sample: w.start_sample + by,
    end_sample: w.end_sample + by,
  }));
  return { segments, words };
}

/** The chunks' results as one: texts joined by spaces, segments and words in file time. */
function joined(outcomes: readonly InferenceOutcome[], spans: readonly Span[]): InferenceOutcome {
  const last = outcomes.at(-1)!;
  const result: EngineResult = { segments: [], words: [] };
  const texts: string[] = [];
  for (const [i, outcome] of outcomes.entries()) {
    const { text, language } = outcome.result;
    if (text !== undefined && text.trim() !== '') texts.push(text.trim());
    if (text !== undefined) result.text = '';
    result.language ??= language;
    const { segments, words } = shifted(outcome, spans[i]!);
    result.segments!.push(...segments);
    result.words!.push(...words);
  }
  if (result.text !== undefined) result.text = texts.join(' ');
  if (result.words!.length === 0) delete result.words;
  return {
    result,
    wallMs: outcomes.reduce((sum, o) => sum + o.wallMs, 0),
    slot: last.slot,
    generation: last.generation,
    inputSampleRate: last.inputSampleRate,
  };
}

/**
 * Runs a transcription request under `strategy`: the VAD first (skipped for audio within one
 * chunk), then one run of `modelId` per chunk in order. The client's signal reaches every run,
 * so a client that leaves stops the chunks not yet run.
 */
export async function runChunked(
  ctx: ChunkingContext,
  modelId: string,
  request: EngineRequest & { audio: Audio },
  strategy: ChunkingStrategy,
  busyTimeoutMs: number | undefined,
): Promise<InferenceOutcome> {
  const options = { busyTimeoutMs, signal: ctx.signal, trace: ctx.trace };
  const duration = audioSeconds(request.audio);
  if (duration <= strategy.maxChunkMs / 1000) return ctx.runtime.infer(modelId, request, options);
  const speech = await speechRegions(ctx, request.audio, strategy, busyTimeoutMs);
  const spans = planChunks(speech, duration, strategy);
  if (spans.length === 1) return ctx.runtime.infer(modelId, request, options);
  const outcomes: InferenceOutcome[] = [];
  for (const span of spans)
    outcomes.push(
      await ctx.runtime.infer(modelId, { ...request, audio: slice(request.audio, span) }, options),
    );
  return joined(outcomes, spans);
}
