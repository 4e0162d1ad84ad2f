/**
 * POST /v1/audio/transcriptions: speech recognition and diarization of a WAV, sent either as a
 * multipart upload or as JSON naming a server-local path.
 */
import type { Audio } from '../../audio/types.js';
import type { TaskToken } from '../../config/types.js';
import { invalidRequest, VoxdError } from '../../errors.js';
import { decodeField, readAudioPath, timing } from '../audio-io.js';
import { readJsonObject } from '../body.js';
import {
  type Fields,
  optionalBool,
  optionalEnum,
  optionalString,
  requestBusyTimeout,
  requireString,
} from '../fields.js';
import { isMultipart, readMultipart } from '../multipart.js';
import { buildOptions } from '../request-options.js';
import type { Route, RouteContext } from '../route.js';
import { requireTask } from '../task-routes.js';

const TRANSCRIPTION_TASKS: readonly TaskToken[] = ['asr', 'diar'];

interface TranscriptionInput {
  fields: Fields;
  audio: Audio;
}

/** Uploads must be WAV: a `.wav` name or no extension at all. */
function checkUploadName(filename: string): void {
  const dot = filename.lastIndexOf('.');
  if (dot > 0 && filename.slice(dot).toLowerCase() !== '.wav') {
    throw invalidRequest(
      `file: "${filename}" is not a WAV upload; only WAV audio (.wav or no extension) is supported`,
    );
  }
}

async function fromMultipart({ req, config }: RouteContext): Promise<TranscriptionInput> {
  const { fields, files } = await readMultipart(req, config.max_request_body_bytes);
  const file = files.find((f) => f.field === 'file');
  if (!file) throw invalidRequest(`'file' is required: expected a WAV upload in the multipart field "file"`);
  checkUploadName(file.filename);
  if (file.data.length === 0) throw invalidRequest(`file: "${file.filename}" is empty`);
  const plain: Fields = Object.fromEntries(fields);
  // OpenAI clients send the context as `prompt`; audio.cpp also takes `text`.
  if (plain['text'] === undefined && plain['prompt'] !== undefined) plain['text'] = plain['prompt'];
  return { fields: plain, audio: await decodeField(file.data, 'file') };
}

async function fromJson(ctx: RouteContext): Promise<TranscriptionInput> {
  const { config } = ctx;
  const body = await readJsonObject(ctx);
  const key = ['audio', 'audio_path', 'file'].find((k) => body[k] !== undefined);
  if (!key)
    throw invalidRequest(
      `'audio' is required: expected a server-local WAV path in "audio", "audio_path" or "file"`,
    );
  const path = requireString(body, key);
  return { fields: body, audio: await readAudioPath(path, key, config.base_dir) };
}

async function transcriptions(ctx: RouteContext) {
  const { fields, audio } = isMultipart(ctx.req) ? await fromMultipart(ctx) : await fromJson(ctx);
  const modelId = requireString(fields, 'model');
  const entry = ctx.runtime.get(modelId);
  requireTask(entry.config, TRANSCRIPTION_TASKS, '/v1/audio/transcriptions');
  if (optionalBool(fields, 'stream')) {
    throw invalidRequest(
      'stream: streamed transcriptions are not available in this version of voxd; send a request without stream',
    );
  }
  const format = optionalEnum(fields, 'response_format', ['json', 'text'] as const) ?? 'json';
  // A multipart `options` field carries a JSON object as text.
  if (typeof fields['options'] === 'string') {
    try {
      fields['options'] = JSON.parse(fields['options']);
    } catch {
      throw invalidRequest(`options: ${JSON.stringify(fields['options'])} is not a JSON object`);
    }
  }
  const language = optionalString(fields, 'language');
  const options = buildOptions(fields, entry.config.default_request_options, []);
  if (language) options['language'] = language;

  const outcome = await ctx.runtime.infer(
    modelId,
    { task: entry.config.task, audio, text: optionalString(fields, 'text'), language, options },
    { busyTimeoutMs: requestBusyTimeout(fields, ctx.url), signal: ctx.signal },
  );
  const text = outcome.result.text;
  if (text === undefined) throw new VoxdError('E_ENGINE', `model '${modelId}' produced no text`);
  if (format === 'text') return { body: Buffer.from(text, 'utf8'), contentType: 'text/plain; charset=utf-8' };
  const json: Record<string, unknown> = { text };
  const turns = outcome.result.speakerTurns;
  if (turns) {
    json['speaker_turns'] = turns;
    json['sample_rate'] = outcome.inputSampleRate;
  }
  json['timing'] = timing(outcome.wallMs, audio);
  return { json };
}

export const transcriptionRoutes: Route[] = [
  { method: 'POST', path: '/v1/audio/transcriptions', handler: transcriptions },
];
