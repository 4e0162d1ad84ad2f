/**
 * `canary_asr`: NVIDIA NeMo Canary (e.g. canary-180m-flash) as sherpa-onnx distributes it: a folder
 * with `encoder.onnx`/`encoder.int8.onnx`, `decoder.onnx`/`decoder.int8.onnx` and `tokens.txt`.
 * Canary transcribes, or translates when the target language differs from the source language;
 * sherpa's setConfig lets each request choose them without reloading the model.
 */
import { readFile } from 'node:fs/promises';
import type { OptionMap } from '../../config/types.js';
import { invalidField, invalidRequest, showValue, VoxdError } from '../../errors.js';
import { TOKENS } from '../sherpa-model-folder.js';
import type { EngineRequest, ParamRow } from '../types.js';
import { SherpaRecognizerFamily } from './recognizer-family.js';

/** The languages sherpa 1.13.8 maps to Canary's language tokens (its config check rejects others). */
export const CANARY_LANGUAGES = ['en', 'de', 'es', 'fr'] as const;

/** Tokens sherpa looks up by name: one missing from tokens.txt aborts the process, so load checks them. */
const SPECIAL_TOKENS = [
  '<|startofcontext|>',
  '<|startoftranscript|>',
  '<|emo:undefined|>',
  ...CANARY_LANGUAGES.map((lang) => `<|${lang}|>`),
  '<|pnc|>',
  '<|nopnc|>',
  '<|noitn|>',
  '<|notimestamp|>',
  '<|nodiarize|>',
  '<|endoftext|>',
];

const LANGUAGES = CANARY_LANGUAGES.join(', ');
const BOOLEANS: Record<string, boolean> = { true: true, false: false, '1': true, '0': false };

/**
 * The 400 of a bad value at `field`: a request's field is named as `param`; a model's load option
 * (`context` names the model) is no field of the request that loaded it.
 */
function invalid(field: string, context: string, problem: string) {
  const message = `${context}${field}: ${problem}`;
  return context ? invalidRequest(message) : invalidField(field, message);
}

function language(field: string, raw: string, context = ''): string {
  const lang = raw.trim().toLowerCase();
  if (!(CANARY_LANGUAGES as readonly string[]).includes(lang))
    throw invalid(field, context, `${showValue(raw)} is invalid; canary_asr expects one of ${LANGUAGES}`);
  return lang;
}

function flag(field: string, raw: string, context = ''): boolean {
  const value = BOOLEANS[raw.trim().toLowerCase()];
  if (value === undefined)
    throw invalid(field, context, `${showValue(raw)} is invalid; expected true or false`);
  return value;
}

/** What the load options fix: a source and a target when given, and the punctuation flag. */
interface CanaryDefaults {
  src?: string;
  tgt?: string;
  pnc: boolean;
}

function loadDefaults(load: OptionMap, modelId: string): CanaryDefaults {
  const model = `model '${modelId}': `;
  return {
    src: load.src_lang === undefined ? undefined : language('load_options.src_lang', load.src_lang, model),
    tgt: load.tgt_lang === undefined ? undefined : language('load_options.tgt_lang', load.tgt_lang, model),
    pnc: load.use_pnc === undefined ? true : flag('load_options.use_pnc', load.use_pnc, model),
  };
}

/**
 * sherpa's canary settings: the source is the request's `language`, else src_lang, else en; the
 * target is the request's or the load option's `tgt_lang`, else the source (plain transcription).
 */
function canarySettings(defaults: CanaryDefaults, lang?: string, options: OptionMap = {}) {
  const srcLang = lang ? language('language', lang) : (defaults.src ?? 'en');
  const tgtLang =
    options.tgt_lang === undefined
      ? (defaults.tgt ?? srcLang)
      : language('options.tgt_lang', options.tgt_lang);
  const usePnc = options.use_pnc === undefined ? defaults.pnc : flag('options.use_pnc', options.use_pnc);
  return { srcLang, tgtLang, usePnc: usePnc ? 1 : 0 };
}

/** A 400 naming every special token the folder's tokens.txt lacks (sherpa would abort on the first). */
async function checkTokens(modelId: string, tokens: string): Promise<void> {
  const text = await readFile(tokens, 'utf8');
  const present = new Set(text.split('\n').map((line) => line.trim().split(/\s+/)[0]));
  const missing = SPECIAL_TOKENS.filter((t) => !present.has(t));
  if (missing.length > 0)
    throw new VoxdError(
      'E_INVALID_REQUEST',
      `model '${modelId}': ${tokens} is not a Canary tokens.txt; it lacks ${missing.join(', ')}`,
    );
}

const PARAMS: readonly ParamRow[] = [
  {
    name: 'language',
    type: 'enum',
    description: 'source language of the audio (the request field); default load_options.src_lang or en',
    values: [...CANARY_LANGUAGES],
  },
  {
    name: 'tgt_lang',
    type: 'enum',
    description: 'language of the text: translation when it differs from the source; default the source',
    values: [...CANARY_LANGUAGES],
  },
  { name: 'use_pnc', type: 'bool', description: 'punctuation and capitals in the text', default: 'true' },
];

const encoderRole = {
  pattern: /(^|[-_.])encoder(\.int8)?\.onnx$/,
  describe: 'encoder.onnx or encoder.int8.onnx',
};
const decoderRole = {
  pattern: /(^|[-_.])decoder(\.int8)?\.onnx$/,
  describe: 'decoder.onnx or decoder.int8.onnx',
};

export const createCanaryFamily = () =>
  new SherpaRecognizerFamily({
    name: 'canary_asr',
    files: { encoder: encoderRole, decoder: decoderRole, tokens: TOKENS },
    prepare: ({ tokens }, _loadOptions, modelId) => checkTokens(modelId, tokens),
    modelConfig: ({ encoder, decoder }, loadOptions, modelId) => ({
      canary: { encoder, decoder, ...canarySettings(loadDefaults(loadOptions, modelId)) },
    }),
    // Every request sends its settings, so one request's languages never carry over to the next.
    requestSettings: (request: EngineRequest, loadOptions) => ({
      config: { canary: canarySettings(loadDefaults(loadOptions, ''), request.language, request.options) },
    }),
    // sherpa runs Canary over the whole input at once, however long; NeMo decodes audio longer than
    // about 40 s in chunks. Unwindowed, the fake model (which keys on the energy of the normalised
    // features) heard speech in every stretch of digital silence longer than about 41 s.
    windowSeconds: 30,
    params: PARAMS,
  });
