/** The option map of a request: model defaults, then the request's `options`, then top-level knobs. */
import { stringifyOption, toOptionMap } from '../config/options.js';
import type { OptionMap } from '../config/types.js';
import type { Fields } from './fields.js';

/** Top-level speech fields copied into options when present and not null. */
export const SPEECH_KNOBS = [
  'seed',
  'temperature',
  'top_k',
  'top_p',
  'max_tokens',
  'max_steps',
  'repetition_penalty',
  'guidance_scale',
  'num_inference_steps',
] as const;

/** Fields of a /v1/tasks/run request passed through as options of the same name. */
export const TASK_KNOBS = [
  ...SPEECH_KNOBS,
  'do_sample',
  'reference_text',
  'instruct',
  'num_beams',
  'text_chunk_size',
  'text_chunk_mode',
  'audio_chunk_seconds',
  'audio_chunk_mode',
  'return_timestamps',
  'target_text',
  'style_ref_text',
  'lyrics',
  'track_name',
  'speaker',
  'duration_seconds',
  'repaint_mode',
  'repaint_strength',
  'style_language',
  'emotion',
  'speaking_rate',
  'pitch_shift',
  'energy_scale',
] as const;

/** Options that name server files (under the file roots; relative paths resolve against the config folder). */
export const PATH_OPTIONS = ['source_audio', 'target_voice', 'prosody_ref', 'style_ref'] as const;

/** Fields whose option name differs from the field name. */
export const TASK_RENAMES: Readonly<Record<string, string>> = {
  repaint_start: 'repainting_start',
  repaint_end: 'repainting_end',
  task_route: 'route',
  route: 'route',
};

/** The model's `defaults` under the request's own `options` object (absent or null: the defaults). */
export function withRequestOptions(defaults: OptionMap, raw: unknown): OptionMap {
  return raw === undefined || raw === null
    ? { ...defaults }
    : { ...defaults, ...toOptionMap(raw, 'options') };
}

export function buildOptions(
  body: Fields,
  defaults: OptionMap,
  knobs: readonly string[],
  renames: Readonly<Record<string, string>> = {},
): OptionMap {
  const options = withRequestOptions(defaults, body['options']);
  // Most bodies set no knob: their few fields are checked rather than every knob looked up. When
  // one is there, the knobs are read in their own order, which is the options' order.
  if (!Object.keys(body).some((key) => knobs.includes(key) || Object.hasOwn(renames, key))) return options;
  for (const key of knobs) {
    const value = stringifyOption(body[key]);
    if (value !== undefined) options[key] = value;
  }
  for (const [field, option] of Object.entries(renames)) {
    const value = stringifyOption(body[field]);
    if (value !== undefined) options[option] = value;
  }
  return options;
}
