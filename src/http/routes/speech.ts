/** POST /v1/audio/speech: text to speech, as WAV bytes, raw PCM or JSON with base64 WAV. */
import { encodePcm16, encodeWav } from '../../audio/wav-encode.js';
import type { TaskToken } from '../../config/types.js';
import { invalidRequest, showValue, VoxdError } from '../../errors.js';
import { timing, timingHeaders } from '../audio-io.js';
import { readJsonObject } from '../body.js';
import { optionalBool, optionalEnum, optionalString, requestBusyTimeout, requireString } from '../fields.js';
import { buildOptions, SPEECH_KNOBS } from '../request-options.js';
import type { Route, RouteContext } from '../route.js';
import { requireTask } from '../task-routes.js';
import { resolveVoice } from '../voice.js';

const SPEECH_TASKS: readonly TaskToken[] = ['tts', 'clon', 'vdes'];
const FORMATS = ['wav', 'pcm', 'json', 'b64_json'] as const;

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
  const format = optionalEnum(body, 'response_format', FORMATS) ?? 'wav';
  if (optionalBool(body, 'stream') || body['stream_format'] !== undefined) {
    throw invalidRequest(
      'stream: streamed speech responses are not available in this version of voxd; send a request without stream',
    );
  }
  const accepted = new Set(entry.family.params.map((p) => p.name));
  const options = {
    ...buildOptions(body, entry.config.default_request_options, SPEECH_KNOBS),
    ...speedOptions(body, accepted),
  };
  const instructions = optionalString(body, 'instructions');
  if (instructions !== undefined) options['instruction'] = instructions;
  const voice = await resolveVoice(body, entry.config, entry.presets, config);

  const outcome = await runtime.infer(
    modelId,
    {
      task: entry.config.task,
      text: input,
      language: optionalString(body, 'language'),
      voiceId: voice.voiceId,
      voiceRef: voice.voiceRef,
      referenceText: voice.referenceText,
      options,
    },
    { busyTimeoutMs: requestBusyTimeout(body, url), signal },
  );
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

export const speechRoutes: Route[] = [{ method: 'POST', path: '/v1/audio/speech', handler: speech }];
