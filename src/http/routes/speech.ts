/** POST /v1/audio/speech: text to speech, as WAV bytes, raw PCM or JSON with base64 WAV. */
import { encodePcm16, encodeWav } from '../../audio/wav-encode.js';
import type { TaskToken } from '../../config/types.js';
import type { EngineRequest } from '../../engines/types.js';
import { invalidRequest, showValue, VoxdError } from '../../errors.js';
import { timing, timingHeaders } from '../audio-io.js';
import { readJsonObject } from '../body.js';
import type { StreamFormat } from '../event-stream.js';
import { optionalBool, optionalEnum, optionalString, requestBusyTimeout, requireString } from '../fields.js';
import { buildOptions, SPEECH_KNOBS } from '../request-options.js';
import type { Route, RouteContext } from '../route.js';
import { streamedInference } from '../streamed-inference.js';
import { requireStreamingMode, requireTask } from '../task-routes.js';
import { resolveVoice } from '../voice.js';

const SPEECH_TASKS: readonly TaskToken[] = ['tts', 'clon', 'vdes'];
const FORMATS = ['wav', 'pcm', 'json', 'b64_json'] as const;
const STREAM_FORMATS = ['sse', 'audio'] as const;

function speedOptions(body: Record<string, unknown>, accepted: ReadonlySet<string>): Record<string, string> {
  const key = body['speed'] !== undefined && body['speed'] !== null ? 'speed' : 'speaking_rate';
  const raw = body[key];
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== 'number' || !Number.isFinite(raw) || raw <= 0) {
    throw invalidRequest(`${key}: ${showValue(raw)} is invalid; expected a positive number`);
  }
  const option = accepted.has('speed')
    ? 'speed'
    : accepted.has('speaking_rate')
      ? 'speaking_rate'
      : undefined;
  if (option) return { [option]: String(raw) };
  // 1.0 is what every model does anyway, so it is accepted as if omitted.
  if (raw === 1) return {};
  throw invalidRequest(`${key}: ${raw} is not supported by this model`);
}

async function speech(ctx: RouteContext) {
  const { url, runtime, config, signal } = ctx;
  const body = await readJsonObject(ctx);
  const modelId = requireString(body, 'model');
  const input = requireString(body, 'input');
  const entry = runtime.get(modelId);
  requireTask(entry.config, SPEECH_TASKS, '/v1/audio/speech');
  const streaming = optionalBool(body, 'stream') === true || body['stream_format'] !== undefined;
  const format = optionalEnum(body, 'response_format', FORMATS) ?? (streaming ? 'pcm' : 'wav');
  const streamFormat = optionalEnum(body, 'stream_format', STREAM_FORMATS) ?? 'sse';
  if (streaming) {
    requireStreamingMode(entry.config);
    if (format !== 'pcm')
      throw invalidRequest(`response_format: "${format}" is invalid for a streamed response; expected pcm`);
  }
  const accepted = new Set(entry.family.params.map((p) => p.name));
  const options = {
    ...buildOptions(body, entry.config.default_request_options, SPEECH_KNOBS),
    ...speedOptions(body, accepted),
  };
  const instructions = optionalString(body, 'instructions');
  if (instructions !== undefined) options['instruction'] = instructions;
  const voice = await resolveVoice(body, entry.config, entry.presets, config);

  const request = {
    task: entry.config.task,
    text: input,
    language: optionalString(body, 'language'),
    voiceId: voice.voiceId,
    voiceRef: voice.voiceRef,
    referenceText: voice.referenceText,
    options,
  };
  const busyTimeoutMs = requestBusyTimeout(body, url);
  if (streaming) return streamSpeech(ctx, modelId, request, busyTimeoutMs, streamFormat);
  const outcome = await runtime.infer(modelId, request, { busyTimeoutMs, signal });
  const audio = outcome.result.audio;
  if (!audio) throw new VoxdError('E_ENGINE', `model '${modelId}' produced no audio output`);
  const t = timing(outcome.wallMs, audio);
  if (format === 'json' || format === 'b64_json') {
    return { json: { audio: encodeWav(audio).toString('base64'), format: 'wav', timing: t } };
  }
  if (format === 'pcm') {
    return { body: encodePcm16(audio), contentType: 'application/octet-stream', headers: timingHeaders(t) };
  }
  return { body: encodeWav(audio), contentType: 'audio/wav', headers: timingHeaders(t) };
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
) {
  let firstMs: number | undefined;
  return streamedInference(ctx, {
    modelId,
    request,
    busyTimeoutMs,
    format,
    async onEvent(event, out, sinceStartMs) {
      if (event.type !== 'audio') return;
      firstMs ??= sinceStartMs;
      const pcm = encodePcm16(event.audio);
      if (format === 'audio') await out.bytes(pcm);
      else await out.event({ type: 'speech.audio.delta', audio: pcm.toString('base64') });
    },
    async finish(_outcome, out) {
      if (firstMs === undefined)
        throw new VoxdError('E_ENGINE', `model '${modelId}' produced no audio delta events`);
      if (format === 'sse')
        await out.event({ type: 'speech.audio.done', timing: { ttft_ms: Math.round(firstMs) } });
    },
  });
}

export const speechRoutes: Route[] = [{ method: 'POST', path: '/v1/audio/speech', handler: speech }];
