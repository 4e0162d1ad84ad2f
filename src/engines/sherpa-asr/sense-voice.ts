/**
 * `sense_voice_asr`: FunAudioLLM SenseVoice as sherpa-onnx distributes it (a folder with
 * `model.onnx` and/or `model.int8.onnx`, and `tokens.txt`).
 *
 * sherpa-onnx 1.13.8 reads SenseVoice's language only from the recognizer config, never from the
 * stream (and replacing the config at run time resets the feature settings the model needs), so
 * the language is fixed when the model loads; a request may restate it but not change it (with
 * `auto`, a request's language is taken as a hint and detection decides).
 * Inverse text normalization is read from the stream, so `use_itn` works per request too.
 */
import type { OptionMap } from '../../config/types.js';
import { invalidField, showValue, VoxdError } from '../../errors.js';
import { readOnnxMetadata } from '../onnx-info.js';
import type { FileRole, FolderFiles } from '../sherpa-model-folder.js';
import { TOKENS } from '../sherpa-model-folder.js';
import type { EngineRequest } from '../types.js';
import { type RequestSettings, SherpaRecognizerFamily } from './recognizer-family.js';

const LANGUAGES = ['auto', 'zh', 'en', 'ja', 'ko', 'yue'] as const;
type Language = (typeof LANGUAGES)[number];

const MODEL: FileRole = { pattern: /\.onnx$/, describe: 'model.onnx or model.int8.onnx' };

/**
 * Metadata sherpa reads from a SenseVoice model without a default (it ends the process when one is
 * missing); checking it also tells a SenseVoice folder from other `model.onnx` + `tokens.txt` folders.
 */
const REQUIRED_METADATA = ['lfr_window_size', 'lfr_window_shift', 'with_itn', 'without_itn'];

async function checkModel({ model }: FolderFiles<'model' | 'tokens'>, modelId: string): Promise<void> {
  const fail = (what: string) => new VoxdError('E_INVALID_REQUEST', `model '${modelId}': ${what}`);
  const metadata = await readOnnxMetadata(model).catch((err: Error) => {
    throw fail(`${model} could not be read as an ONNX model: ${err.message}`);
  });
  const missing = REQUIRED_METADATA.filter((key) => !metadata.has(key));
  if (missing.length > 0)
    throw fail(
      `${model} is not a SenseVoice model exported for sherpa-onnx: its metadata lacks ${missing.join(', ')}`,
    );
}

const isLanguage = (value: string): value is Language => (LANGUAGES as readonly string[]).includes(value);

/** true/false (or 1/0); undefined when absent; `where` names the option in the error. */
function flag(options: OptionMap, key: string, where: string): boolean | undefined {
  const raw = options[key];
  if (raw === undefined) return undefined;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw invalidField(
    `${where}${key}`,
    `${where}${key}: ${showValue(raw)} is invalid; expected true or false`,
  );
}

function loadLanguage(loadOptions: OptionMap, modelId: string): Language {
  const raw = loadOptions['language'] ?? 'auto';
  if (!isLanguage(raw)) {
    throw new VoxdError(
      'E_INVALID_REQUEST',
      `model '${modelId}': load_options.language: ${showValue(raw)} is invalid; expected one of: ${LANGUAGES.join(', ')}`,
    );
  }
  return raw;
}

function loadItn(loadOptions: OptionMap, modelId: string): boolean {
  try {
    return flag(loadOptions, 'use_itn', 'load_options.') ?? false;
  } catch (err) {
    throw new VoxdError('E_INVALID_REQUEST', `model '${modelId}': ${(err as Error).message}`);
  }
}

/** Checks the request's language against the loaded one, and turns `use_itn` into a stream option. */
function requestSettings(request: EngineRequest, loadOptions: OptionMap, modelId: string): RequestSettings {
  const asked = (request.language || request.options['language'] || '').trim();
  if (asked) {
    if (!isLanguage(asked)) {
      throw invalidField(
        'language',
        `language: ${showValue(asked)} is invalid; expected one of: ${LANGUAGES.join(', ')}`,
      );
    }
    const loaded = loadLanguage(loadOptions, modelId);
    // With auto, a requested language is a hint (as OpenAI documents `language`): detection decides.
    if (loaded !== 'auto' && asked !== loaded) {
      throw invalidField(
        'language',
        `language: ${showValue(asked)} cannot be set per request: model '${modelId}' was loaded with ` +
          `load_options.language "${loaded}" and sherpa-onnx fixes SenseVoice's language at load; ` +
          `configure a model with load_options.language ${showValue(asked)}`,
      );
    }
  }
  const itn = flag(request.options, 'use_itn', 'options.');
  return itn === undefined ? {} : { stream: { use_itn: itn ? '1' : '0' } };
}

export const createSenseVoiceFamily = () =>
  new SherpaRecognizerFamily({
    name: 'sense_voice_asr',
    files: { model: MODEL, tokens: TOKENS },
    prepare: (files, _loadOptions, modelId) => checkModel(files, modelId),
    modelConfig: ({ model }, loadOptions, modelId) => ({
      senseVoice: {
        model,
        language: loadLanguage(loadOptions, modelId),
        useInverseTextNormalization: loadItn(loadOptions, modelId) ? 1 : 0,
      },
    }),
    requestSettings,
    params: [
      {
        name: 'language',
        type: 'enum',
        description:
          'a hint with load_options.language auto; otherwise must match it (sherpa fixes it at load)',
        values: [...LANGUAGES],
      },
      {
        name: 'use_itn',
        type: 'bool',
        description: 'inverse text normalization (punctuation, casing, digits); default load_options.use_itn',
      },
    ],
  });
