/**
 * `whisper_asr`: Whisper as sherpa-onnx exports it (`<name>-encoder.onnx`, `<name>-decoder.onnx`,
 * each optionally `.int8`, and `<name>-tokens.txt`). The language and task live in the
 * recognizer's config, not in its streams (sherpa 1.13.8 ignores a stream's `language` option),
 * so a request with its own language re-configures its session's recognizer before decoding:
 * setConfig only swaps the language/task the decoder starts from, not the loaded weights.
 *
 * sherpa ends the whole process (exit, not an exception) on a language the model does not know and
 * on missing encoder metadata, so both are checked here first, from the encoder's metadata.
 */
import type { OptionMap } from '../../config/types.js';
import { invalidField, showValue, VoxdError } from '../../errors.js';
import { readOnnxMetadata } from '../onnx-info.js';
import { TOKENS } from '../sherpa-model-folder.js';
import type { EngineRequest } from '../types.js';
import { SherpaRecognizerFamily } from './recognizer-family.js';

const TASKS = ['transcribe', 'translate'] as const;
type Task = (typeof TASKS)[number];

/** The encoder metadata sherpa reads; without any of these it exits. */
const REQUIRED_METADATA = [
  'n_mels',
  'n_text_layer',
  'n_text_ctx',
  'n_text_state',
  'n_vocab',
  'sot',
  'eot',
  'blank_id',
  'translate',
  'transcribe',
  'is_multilingual',
  'no_timestamps',
  'no_speech',
  'sot_sequence',
];
const MULTILINGUAL_METADATA = ['all_language_tokens', 'all_language_codes'];

interface KnownLanguages {
  modelId: string;
  /** The language codes the model knows; empty for an English-only (`.en`) model. */
  languages: readonly string[];
}

interface WhisperModel extends KnownLanguages {
  /** The load-time language ('' = detect) and task, used by requests that name none. */
  language: string;
  task: Task;
  /** The `whisper` modelConfig entry as loaded. */
  whisper: Record<string, unknown>;
}

const modelError = (modelId: string, what: string) =>
  new VoxdError('E_INVALID_REQUEST', `model '${modelId}': ${what}`);

async function encoderLanguages(modelId: string, encoder: string): Promise<string[]> {
  let metadata: Map<string, string>;
  try {
    metadata = await readOnnxMetadata(encoder);
  } catch (err) {
    throw modelError(modelId, `${encoder} is not a readable ONNX file (${(err as Error).message})`);
  }
  const multilingual = metadata.get('is_multilingual') !== '0';
  const missing = [...REQUIRED_METADATA, ...(multilingual ? MULTILINGUAL_METADATA : [])].filter(
    (key) => !metadata.has(key),
  );
  if (missing.length > 0)
    throw modelError(
      modelId,
      `${encoder} is not a sherpa-onnx Whisper encoder: its metadata lacks ${missing.join(', ')}`,
    );
  if (!multilingual) return [];
  const languages = metadata
    .get('all_language_codes')!
    .split(',')
    .map((code) => code.trim());
  // sherpa overwrites sot_sequence[1] (language) and [2] (task) of a multilingual model.
  if (metadata.get('sot_sequence')!.split(',').length < 3)
    throw modelError(modelId, `${encoder}: a multilingual model needs a sot_sequence of 3 tokens`);
  return languages;
}

/**
 * A language as Whisper names it: '' for detection ('auto' or empty), else the model's code, also
 * given as a BCP 47 tag (en-US -> en). A language the model does not know is a 400 naming it.
 */
function pickLanguage(model: KnownLanguages, where: string, raw: string): string {
  const value = raw.trim().toLowerCase();
  if (model.languages.length === 0) {
    if (value === '' || value === 'auto' || value === 'en' || value.startsWith('en-')) return 'en';
    throw invalidField(
      where,
      `${where}: ${showValue(raw)} is not available: model '${model.modelId}' is an English-only Whisper model (language en)`,
    );
  }
  if (value === '' || value === 'auto') return '';
  const code = model.languages.includes(value) ? value : value.split(/[-_]/)[0]!;
  if (model.languages.includes(code)) return code;
  throw invalidField(
    where,
    `${where}: ${showValue(raw)} is not a language of Whisper model '${model.modelId}'; expected auto or one of ${model.languages.join(', ')}`,
  );
}

function pickTask(model: KnownLanguages, where: string, raw: string): Task {
  if (!(TASKS as readonly string[]).includes(raw))
    throw invalidField(where, `${where}: ${showValue(raw)} is invalid; expected transcribe or translate`);
  if (raw === 'translate' && model.languages.length === 0)
    throw invalidField(
      where,
      `${where}: "translate" needs a multilingual Whisper model; '${model.modelId}' is English-only`,
    );
  return raw as Task;
}

async function prepare(
  { encoder, decoder }: { encoder: string; decoder: string },
  loadOptions: OptionMap,
  modelId: string,
): Promise<WhisperModel> {
  const languages = await encoderLanguages(modelId, encoder);
  const known = { modelId, languages };
  const language = pickLanguage(known, 'load_options.language', loadOptions.language ?? '');
  const task = pickTask(known, 'load_options.task', loadOptions.task ?? 'transcribe');
  // tailPaddings -1: sherpa's default (1000 frames of silence after the audio).
  const whisper = { encoder, decoder, language, task, tailPaddings: -1 };
  return { ...known, language, task, whisper };
}

/** The language and task of one request; the model's own when it names none. */
function requestSettings(request: EngineRequest, model: WhisperModel) {
  const rawLanguage = request.language ?? request.options.language;
  const rawTask = request.options.task;
  const language = rawLanguage === undefined ? model.language : pickLanguage(model, 'language', rawLanguage);
  const task = rawTask === undefined ? model.task : pickTask(model, 'options.task', rawTask);
  const changed = language !== model.language || task !== model.task;
  return {
    ...(changed ? { config: { whisper: { ...model.whisper, language, task } } } : {}),
    // An English-only model reports no language; a multilingual one reports the one it used.
    ...(model.languages.length === 0 ? { language: 'en' } : {}),
  };
}

const onnxRole = (part: string) => ({
  pattern: new RegExp(`(^|[-_.])${part}(\\.int8)?\\.onnx$`),
  describe: `*${part}.onnx`,
});

export const createWhisperFamily = () =>
  new SherpaRecognizerFamily<'encoder' | 'decoder', WhisperModel>({
    name: 'whisper_asr',
    files: { encoder: onnxRole('encoder'), decoder: onnxRole('decoder'), tokens: TOKENS },
    prepare,
    modelConfig: (_files, _options, _id, model) => ({ whisper: model.whisper }),
    requestSettings: (request, _options, _id, model) => requestSettings(request, model),
    // sherpa decodes at most 30 s (it drops the rest); windows of 28 s leave it room for tail padding.
    windowSeconds: 28,
    // Fewer than 80 samples (half a 10 ms feature hop) give no feature frame and crash sherpa's Whisper feature code.
    minSamples: 400,
    params: [
      {
        name: 'language',
        type: 'string',
        description:
          "spoken language code (the request's language field), or auto to detect it; English-only models take only en",
        default: 'load_options.language, else auto (en for English-only models)',
      },
      {
        name: 'task',
        type: 'enum',
        description: 'transcribe, or translate into English (multilingual models only)',
        default: 'load_options.task, else transcribe',
        values: [...TASKS],
      },
    ],
  });
