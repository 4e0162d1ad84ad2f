/**
 * `kokoro_tts`: Kokoro voices as sherpa-onnx distributes them (kokoro-en-v0_19,
 * kokoro-multi-lang-v1_0, ...). `path` is the model folder: one `*.onnx`, `voices.bin`, `tokens.txt`,
 * `espeak-ng-data/` (else Debian's), and for multi-lingual models `lexicon*.txt` files. Speaker
 * names come from the model's metadata, read at load. Sessions run in runner processes: one
 * OfflineTts shared by the model's slots (isolation "model") or one each ("session").
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { OptionMap } from '../../config/types.js';
import { invalidField, showValue, VoxdError } from '../../errors.js';
import { readOnnxMetadata } from '../onnx-info.js';
import { ANY_ONNX, findModelFiles, precisionOption, TOKENS } from '../sherpa-model-folder.js';
import type { LoadSpec } from '../types.js';
import { espeakDataDir } from './espeak-data.js';
import { SherpaTtsFamily, type VoiceResolver } from './tts-session.js';

const FAMILY = 'kokoro_tts';
const VOICES = { pattern: /(^|[-_.])voices\.bin$/, describe: 'voices.bin' };
const LEXICON = /^lexicon.*\.txt$/;

function modelError(modelId: string, what: string): VoxdError {
  return new VoxdError('E_INVALID_REQUEST', `model '${modelId}': ${what}`);
}

/** What sherpa reads from a Kokoro model's metadata; each key it needs is checked here first,
 * because sherpa ends the whole process when one is missing or voices.bin does not fit. */
export interface KokoroMeta {
  sampleRate: number;
  numSpeakers: number;
  /** 1: English only, espeak phonemes (v0.19); 2 and up: multi-lingual, needs a lexicon or `lang`. */
  version: number;
  /** Floats per speaker in voices.bin: style_dim[0] * style_dim[2]. */
  styleFloats: number;
  /** style_dim[0]: a chunk of this many tokens ends the process in sherpa (511 in real models). */
  maxTokens: number;
  /** Speaker names by number, or empty when the model has none (voices are then numbers). */
  speakerNames: string[];
}

function intValue(modelId: string, file: string, meta: Map<string, string>, key: string): number {
  const raw = meta.get(key);
  if (raw === undefined || !/^\d+$/.test(raw.trim()))
    throw modelError(
      modelId,
      `${file} is not a sherpa-onnx Kokoro model: its metadata ${raw === undefined ? `lacks "${key}"` : `"${key}" is "${raw}", not an integer`}`,
    );
  return Number(raw);
}

export async function kokoroMeta(modelId: string, model: string): Promise<KokoroMeta> {
  let meta: Map<string, string>;
  try {
    meta = await readOnnxMetadata(model);
  } catch (err) {
    throw modelError(modelId, `${model} is not a readable ONNX model (${(err as Error).message})`);
  }
  const sampleRate = intValue(modelId, model, meta, 'sample_rate');
  const numSpeakers = intValue(modelId, model, meta, 'n_speakers');
  intValue(modelId, model, meta, 'has_espeak');
  const version = meta.has('version') ? intValue(modelId, model, meta, 'version') : 1;
  const dims = (meta.get('style_dim') ?? '').split(',').map((d) => Number(d.trim()));
  if (dims.length !== 3 || dims[1] !== 1 || !dims.every((d) => Number.isInteger(d) && d > 0))
    throw modelError(
      modelId,
      `${model} is not a sherpa-onnx Kokoro model: metadata "style_dim" is "${meta.get('style_dim') ?? ''}", expected three sizes like 511,1,256`,
    );
  if (sampleRate <= 0 || numSpeakers <= 0)
    throw modelError(modelId, `${model}: metadata sample_rate and n_speakers must be positive`);
  const names = (meta.get('speaker_names') ?? '').split(',').map((n) => n.trim());
  // Names that do not cover every speaker exactly can not be trusted to map to numbers.
  const speakerNames =
    names.length === numSpeakers && names.every((n) => n !== '') && new Set(names).size === names.length
      ? names
      : [];
  return {
    sampleRate,
    numSpeakers,
    version,
    styleFloats: dims[0]! * dims[2]!,
    maxTokens: dims[0]!,
    speakerNames,
  };
}

/**
 * Kokoro's tokens.txt: `<one character> <id>` a line (the space as a bare id). sherpa ends the whole
 * process on a longer symbol or a repeated one, so a wrong file is refused here instead.
 */
async function checkTokens(modelId: string, path: string): Promise<void> {
  const lines = (await readFile(path, 'utf8')).split('\n');
  if (lines.at(-1) === '') lines.pop();
  const seen = new Set<string>();
  lines.forEach((raw, i) => {
    const line = raw.replace(/^[ \t\r]+|[ \t\r]+$/g, '');
    const fields = line.split(/[ \t]+/);
    const symbol = fields.length === 1 ? ' ' : fields[0]!;
    const ok =
      /^\d+$/.test(fields.at(-1)!) &&
      fields.length <= 2 &&
      ([...symbol].length === 1 || symbol === '<BLNK>') &&
      !seen.has(symbol);
    if (!ok)
      throw modelError(
        modelId,
        `${path} line ${i + 1} ("${raw}") is not "<one symbol> <id>" or repeats a symbol: not a Kokoro tokens.txt`,
      );
    seen.add(symbol);
  });
}

/** The lexicon files to pass: the `lexicon` load option's, else every lexicon*.txt in the folder. */
async function lexiconFiles(modelId: string, dir: string, loadOptions: OptionMap): Promise<string[]> {
  const names = (await readdir(dir)).filter((n) => LEXICON.test(n)).sort();
  const option = loadOptions['lexicon'];
  if (option !== undefined) {
    const wanted = option
      .split(',')
      .map((n) => n.trim())
      .filter((n) => n !== '');
    const missing = wanted.filter((n) => !names.includes(n));
    if (missing.length > 0 || wanted.length === 0)
      throw modelError(
        modelId,
        `load_options.lexicon: "${option}" is invalid; expected lexicon files of ${dir} separated by commas (${names.join(', ') || 'it has none'})`,
      );
    return wanted.map((n) => join(dir, n));
  }
  // US and British English spell the same words two ways; sherpa's own examples pass the US one.
  const chosen = names.includes('lexicon-us-en.txt') ? names.filter((n) => n !== 'lexicon-gb-en.txt') : names;
  return chosen.map((n) => join(dir, n));
}

/** The espeak-ng voice names in `dataDir/lang` (en-US, cmn, fr, ...), lower-cased; empty if unreadable. */
async function espeakVoices(dataDir: string): Promise<Set<string>> {
  try {
    const entries = await readdir(join(dataDir, 'lang'), { recursive: true, withFileTypes: true });
    return new Set(entries.filter((e) => e.isFile()).map((e) => e.name.toLowerCase()));
  } catch {
    return new Set();
  }
}

/** `lang` load option: the espeak-ng voice for text outside the lexicons (en-us, fr, cmn, ...). */
async function langOption(modelId: string, dataDir: string, loadOptions: OptionMap): Promise<string> {
  const lang = loadOptions['lang'];
  if (lang === undefined) return '';
  const known = await espeakVoices(dataDir);
  // espeak-ng finds a voice by its file name only (en-us works, en-gb does not: that voice is `en`).
  if (!/^[A-Za-z0-9_-]{1,40}$/.test(lang) || (known.size > 0 && !known.has(lang.toLowerCase())))
    throw modelError(
      modelId,
      `load_options.lang: "${lang}" is invalid; expected the name of an espeak-ng voice in ${join(dataDir, 'lang')}, e.g. en-us, en, fr, es, it, pt-br, hi, ja, cmn`,
    );
  return lang;
}

/** Voices by name (af_bella) or by number; an unknown one is a 400 that lists some valid names. */
export function kokoroVoices(meta: KokoroMeta): VoiceResolver {
  const { speakerNames, numSpeakers } = meta;
  const listed = () => {
    if (speakerNames.length === 0) return `speaker numbers 0..${numSpeakers - 1}`;
    const some = speakerNames.slice(0, 8).join(', ');
    return speakerNames.length > 8 ? `${some}, ... (${speakerNames.length} in all)` : some;
  };
  return (voice) => {
    if (voice === undefined || voice === '') return 0;
    if (/^\d{1,6}$/.test(voice)) {
      const sid = Number(voice);
      if (sid >= numSpeakers)
        throw invalidField(
          'voice',
          `voice: speaker ${sid} does not exist; this model has ${numSpeakers} speaker(s): ${listed()}`,
        );
      return sid;
    }
    const sid = speakerNames.indexOf(voice);
    if (sid < 0)
      throw invalidField(
        'voice',
        `voice: ${showValue(voice)} is not a voice of this model; its voices are ${listed()}`,
      );
    return sid;
  };
}

export interface KokoroSetup {
  config: unknown;
  meta: KokoroMeta;
}

/** The OfflineTts config of a Kokoro folder, after every check that would otherwise kill the process. */
export async function kokoroSetup(spec: LoadSpec): Promise<KokoroSetup> {
  const { modelId, path: dir, loadOptions } = spec;
  const files = await findModelFiles(
    modelId,
    FAMILY,
    dir,
    { model: ANY_ONNX, voices: VOICES, tokens: TOKENS },
    precisionOption(modelId, loadOptions),
  );
  const meta = await kokoroMeta(modelId, files.model);
  await checkTokens(modelId, files.tokens);
  const voicesBytes = (await stat(files.voices)).size;
  const expected = meta.numSpeakers * meta.styleFloats * 4;
  if (voicesBytes !== expected)
    throw modelError(
      modelId,
      `${files.voices} has ${voicesBytes} bytes; the model's metadata (${meta.numSpeakers} speakers, style_dim) needs ${expected}: voices.bin and the model do not belong together`,
    );
  const dataDir = await espeakDataDir(modelId, dir);
  const lexicon = await lexiconFiles(modelId, dir, loadOptions);
  const lang = await langOption(modelId, dataDir, loadOptions);
  if (meta.version >= 2 && lexicon.length === 0 && lang === '')
    throw modelError(
      modelId,
      `${FAMILY}: this is a multi-lingual Kokoro model (metadata version ${meta.version}); it needs lexicon*.txt files in ${dir} or load_options.lang (an espeak-ng voice such as en-us)`,
    );
  const kokoro = {
    model: files.model,
    voices: files.voices,
    tokens: files.tokens,
    dataDir,
    lexicon: lexicon.join(','),
    lang,
  };
  return { config: { model: { kokoro, numThreads: 1, debug: false }, maxNumSentences: 1 }, meta };
}

export const createKokoroFamily = () =>
  new SherpaTtsFamily({
    name: FAMILY,
    params: [
      {
        name: 'voice',
        type: 'string',
        description: "a speaker name from the model's metadata (e.g. af_bella) or a speaker number",
        default: '0',
      },
    ],
    setup: async (spec) => {
      const { config, meta } = await kokoroSetup(spec);
      return { config, voices: kokoroVoices(meta), maxTokens: meta.maxTokens };
    },
  });
