/** POST /v1/tasks/run: any task, with the CLI request-sequence fields (reference §1.11). */
import { isAbsolute, resolve } from 'node:path';
import type { Audio } from '../../audio/types.js';
import { encodeWav } from '../../audio/wav-encode.js';
import { isPlainObject } from '../../config/errors.js';
import type { EngineResult } from '../../engines/types.js';
import { invalidRequest, showValue } from '../../errors.js';
import { decodeBase64Audio, readAudioPath, timing } from '../audio-io.js';
import { readJsonObject } from '../body.js';
import {
  type Fields,
  optionalBusyTimeout,
  optionalString,
  requestBusyTimeout,
  requireString,
} from '../fields.js';
import { buildOptions, TASK_KNOBS, TASK_RENAMES } from '../request-options.js';
import type { Route, RouteContext } from '../route.js';

/** Options that name files; relative paths resolve against the config folder. */
const PATH_OPTIONS = ['source_audio', 'target_voice', 'prosody_ref', 'style_ref'] as const;

async function inputAudio(request: Fields, baseDir: string, limit: number): Promise<Audio | undefined> {
  const path = optionalString(request, 'audio');
  const base64 = request['audio_base64'];
  if (path !== undefined && base64 !== undefined)
    throw invalidRequest('provide only one of audio or audio_base64');
  if (path !== undefined) return readAudioPath(path, 'audio', baseDir);
  if (base64 === undefined) return undefined;
  if (typeof base64 !== 'string' || base64.length === 0) {
    throw invalidRequest(
      `audio_base64: ${showValue(base64)} is invalid; expected a non-empty base64 WAV string`,
    );
  }
  return decodeBase64Audio(base64, 'audio_base64', limit);
}

function resultJson(result: EngineResult, wallMs: number): Record<string, unknown> {
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
  out['timing'] = timing(wallMs, result.audio);
  return out;
}

async function run(ctx: RouteContext) {
  const { url, runtime, config, signal } = ctx;
  const body = await readJsonObject(ctx);
  const modelId = requireString(body, 'model');
  if (body['request'] !== undefined && !isPlainObject(body['request'])) {
    throw invalidRequest(`request: ${showValue(body['request'])} is invalid; expected an object`);
  }
  const request: Fields = (body['request'] as Fields | undefined) ?? body;
  const entry = runtime.get(modelId);
  const options = buildOptions(request, entry.config.default_request_options, TASK_KNOBS, TASK_RENAMES);
  for (const key of PATH_OPTIONS) {
    const value = optionalString(request, key);
    if (value !== undefined) options[key] = isAbsolute(value) ? value : resolve(config.base_dir, value);
  }
  const voiceRefPath = optionalString(request, 'voice_ref');
  const outcome = await runtime.infer(
    modelId,
    {
      task: entry.config.task,
      text: optionalString(request, 'text'),
      language: optionalString(request, 'language'),
      audio: await inputAudio(request, config.base_dir, config.max_request_body_bytes),
      voiceId: optionalString(request, 'voice_id'),
      voiceRef:
        voiceRefPath === undefined
          ? undefined
          : await readAudioPath(voiceRefPath, 'voice_ref', config.base_dir),
      referenceText: optionalString(request, 'reference_text'),
      options,
    },
    { busyTimeoutMs: requestBusyTimeout(body, url) ?? optionalBusyTimeout(request), signal },
  );
  return { json: resultJson(outcome.result, outcome.wallMs) };
}

export const taskRoutes: Route[] = [{ method: 'POST', path: '/v1/tasks/run', handler: run }];
