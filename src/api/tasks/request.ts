/**
 * What a /v1/tasks request means (run, stream, and each of a batch): the audio.cpp CLI's request
 * fields (reference §1.11-1.13) as one engine request for any task: the text within
 * max_input_chars, the options (defaults, `options`, the knobs of TASK_KNOBS and TASK_RENAMES, the
 * server files of PATH_OPTIONS), the input audio and the voice reference.
 */
import {
  type AudioLimits,
  decodeBase64Audio,
  decodeBase64Literal,
  readAudioPath,
} from '../../audio/input.js';
import type { Audio } from '../../audio/types.js';
import type { EngineRequest } from '../../engines/types.js';
import { invalidRequest } from '../../errors.js';
import type { Runtime } from '../../runtime/runtime.js';
import { takeLifted } from '../../util/json-reader.js';
import { type FileAccess, fileAccessOf, serverFilePath } from '../../util/server-files.js';
import { type AudioCaller, audioLimits } from '../audio-limits.js';
import { modelEntry } from '../model-lookup.js';
import { buildOptions, PATH_OPTIONS, TASK_KNOBS, TASK_RENAMES } from '../request-options.js';
import { checkInputChars } from '../speech/input-text.js';

/** The request fields a task reads (the route's schema checked their types); each may be null. */
export type TaskFields = TaskTextFields & { [key in (typeof PATH_OPTIONS)[number]]?: string | null };

interface TaskTextFields {
  text?: string | null;
  language?: string | null;
  audio?: string | null;
  audio_base64?: string | null;
  voice_id?: string | null;
  voice_ref?: string | null;
  reference_text?: string | null;
  [field: string]: unknown;
}

/** A field that may be null (absent). */
const given = <T>(value: T | null | undefined): T | undefined => value ?? undefined;

async function inputAudio(
  request: TaskFields,
  access: FileAccess,
  limits: AudioLimits,
): Promise<Audio | undefined> {
  const path = given(request.audio);
  const base64 = given(request.audio_base64);
  if (path !== undefined && base64 !== undefined)
    throw invalidRequest('provide only one of audio or audio_base64');
  if (path !== undefined) return readAudioPath(path, 'audio', access, limits);
  if (base64 === undefined) return undefined;
  const literal = takeLifted(request, 'audio_base64');
  return literal
    ? decodeBase64Literal(literal.bytes, literal.movable, 'audio_base64', limits)
    : decodeBase64Audio(base64, 'audio_base64', limits);
}

/**
 * The engine request of one task request to `modelId`; `at` is where its fields sit in the body
 * (`request.`, `requests[2].` or nothing), for messages.
 */
export async function taskRequest(
  runtime: Runtime,
  modelId: string,
  request: TaskFields,
  at: string,
  caller: AudioCaller,
): Promise<EngineRequest> {
  const { config } = caller;
  const entry = await modelEntry(runtime, modelId);
  const text = given(request.text);
  checkInputChars(text, `${at}text`, entry.config, config);
  const options = buildOptions(request, entry.config.default_request_options, TASK_KNOBS, TASK_RENAMES);
  const access = fileAccessOf(config);
  for (const key of PATH_OPTIONS) {
    const value = given(request[key]);
    if (value !== undefined) options[key] = await serverFilePath(value, key, access);
  }
  const voiceRefPath = given(request.voice_ref);
  // Most requests carry no audio: the limits (and the request signal they hold) are made only for one.
  const hasAudio =
    given(request.audio) !== undefined ||
    given(request.audio_base64) !== undefined ||
    voiceRefPath !== undefined;
  const limits = hasAudio ? audioLimits(caller, entry.config) : undefined;
  return {
    task: entry.config.task,
    text,
    language: given(request.language),
    audio: limits && (await inputAudio(request, access, limits)),
    voiceId: given(request.voice_id),
    voiceRef:
      voiceRefPath === undefined || !limits
        ? undefined
        : await readAudioPath(voiceRefPath, 'voice_ref', access, limits),
    referenceText: given(request.reference_text),
    options,
  };
}
