/**
 * `matcha_tts`: Matcha-TTS (icefall) voices as sherpa-onnx distributes them. `path` is the model
 * folder: the acoustic model (`model-steps-3.onnx`; `load_options.steps` picks among several),
 * `tokens.txt`, and either `espeak-ng-data/` (English; Debian's is the fallback) or `lexicon.txt`
 * (Chinese; plus any `*.fst` / `*.far` text-normalisation rules). The vocoder is a separate
 * download: a `*vocos*.onnx` / `*hifigan*.onnx` in the folder, or `load_options.vocoder`.
 *
 * sherpa-onnx ends the process (exit or crash) on a model or vocoder it cannot use, so everything
 * it would ask for is checked here first, from the files' ONNX metadata.
 */
import { readdir, stat } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import type { OptionMap } from '../../config/types.js';
import { VoxdError } from '../../errors.js';
import { numberOption } from '../engine-options.js';
import { type OnnxInfo, readOnnxInfo } from '../onnx-info.js';
import { type FileRole, findModelFiles, precisionOption, TOKENS } from '../sherpa-model-folder.js';
import type { LoadSpec } from '../types.js';
import { espeakDataDir } from './espeak-data.js';
import { SherpaTtsFamily } from './tts-session.js';

const FAMILY = 'matcha_tts';
const VOCODERS_URL = 'https://github.com/k2-fsa/sherpa-onnx/releases/tag/vocoder-models';

/** The `model_type` values sherpa-onnx 1.13.8 runs as a vocoder (it tells them apart by this). */
const VOCODER_TYPES = ['vocos', 'matcha-tts vocos', 'hifigan'];

/** Metadata sherpa reads without a default: a missing key ends the process. */
const REQUIRED_METADATA = ['sample_rate', 'n_speakers', 'pad_id', 'use_eos_bos'];

/** The Chinese rule FSTs in the order sherpa's examples apply them (phone numbers before numbers). */
const FST_ORDER = ['phone.fst', 'date.fst', 'number.fst'];

const VOCODER: FileRole = {
  pattern: /(vocos|hifigan)[^/]*\.onnx$/i,
  describe: `a vocoder such as vocos-22khz-univ.onnx or hifigan_v2.onnx, downloaded separately from ${VOCODERS_URL}; put it in the folder or give its path as load_options.vocoder`,
};

const LEXICON: FileRole = { pattern: /^lexicon\.txt$/, describe: 'lexicon.txt', optional: true };

function modelError(modelId: string, what: string): VoxdError {
  return new VoxdError('E_INVALID_REQUEST', `model '${modelId}': ${what}`);
}

/** The acoustic model's role: `model-steps-N.onnx` when `steps` is given, else any non-vocoder `.onnx`. */
function acousticRole(loadOptions: OptionMap): FileRole {
  const steps = numberOption(loadOptions, 'steps', {
    where: 'load_options.',
    min: 1,
    max: 1000,
    integer: true,
  });
  if (steps === undefined)
    return {
      pattern: /^(?!.*(vocos|hifigan)).*\.onnx$/i,
      describe: 'the acoustic model, e.g. model-steps-3.onnx (choose among several with load_options.steps)',
    };
  return {
    pattern: new RegExp(`^model-steps-${steps}([._-]int8)?\\.onnx$`),
    describe: `model-steps-${steps}.onnx`,
  };
}

async function onnxInfo(modelId: string, path: string, what: string): Promise<OnnxInfo> {
  try {
    return await readOnnxInfo(path);
  } catch (err) {
    throw modelError(modelId, `${what} ${path} cannot be read: ${err instanceof Error ? err.message : err}`);
  }
}

/** `load_options.vocoder`: a path, relative ones against the model folder. */
async function vocoderOption(modelId: string, dir: string, raw: string): Promise<string> {
  const path = isAbsolute(raw) ? raw : resolve(dir, raw);
  const isFile = await stat(path).then(
    (s) => s.isFile(),
    () => false,
  );
  if (!isFile) throw modelError(modelId, `load_options.vocoder: "${raw}" is not a file (looked at ${path})`);
  return path;
}

/** The `.fst` / `.far` text-normalisation rules of a (Chinese) folder, as sherpa's comma lists. */
async function ruleFiles(dir: string): Promise<{ ruleFsts?: string; ruleFars?: string }> {
  const names = (await readdir(dir)).sort();
  const rank = (n: string) => (FST_ORDER.includes(n) ? FST_ORDER.indexOf(n) : FST_ORDER.length);
  const fsts = names.filter((n) => n.endsWith('.fst')).sort((a, b) => rank(a) - rank(b));
  const fars = names.filter((n) => n.endsWith('.far'));
  const list = (files: string[]) => files.map((n) => join(dir, n)).join(',');
  return {
    ...(fsts.length ? { ruleFsts: list(fsts) } : {}),
    ...(fars.length ? { ruleFars: list(fars) } : {}),
  };
}

/** The model folder's files; the vocoder may be absent only when the acoustic model has one built in. */
async function folderFiles(spec: LoadSpec) {
  const { modelId, path: dir, loadOptions } = spec;
  const precision = precisionOption(modelId, loadOptions);
  const roles = { acousticModel: acousticRole(loadOptions), tokens: TOKENS, lexicon: LEXICON };
  if (loadOptions.vocoder !== undefined) {
    const files = await findModelFiles(modelId, FAMILY, dir, roles, precision);
    return { ...files, vocoder: await vocoderOption(modelId, dir, loadOptions.vocoder) };
  }
  try {
    return await findModelFiles(modelId, FAMILY, dir, { ...roles, vocoder: VOCODER }, precision);
  } catch (missing) {
    // An acoustic model that outputs `audio_output` has its vocoder built in and needs none; for
    // any other, the first error stands (it names every missing file, the vocoder included).
    const files = await findModelFiles(modelId, FAMILY, dir, roles, precision).catch(() => {
      throw missing;
    });
    const info = await onnxInfo(modelId, files.acousticModel, 'acoustic model');
    if (!info.outputs.includes('audio_output')) throw missing;
    return { ...files, vocoder: undefined };
  }
}

/** The OfflineTts config of a Matcha folder, after checking everything sherpa would die on. */
export async function matchaConfig(spec: LoadSpec): Promise<unknown> {
  const { modelId, path: dir } = spec;
  const files = await folderFiles(spec);
  const acoustic = await onnxInfo(modelId, files.acousticModel, 'acoustic model');
  const meta = acoustic.metadata;
  const lacking = REQUIRED_METADATA.filter((key) => meta[key] === undefined);
  if (lacking.length > 0)
    throw modelError(
      modelId,
      `${files.acousticModel} is not a Matcha acoustic model sherpa-onnx can run: its metadata lacks ${lacking.join(', ')}`,
    );

  let vocoder = '';
  if (!acoustic.outputs.includes('audio_output') && files.vocoder) {
    const info = await onnxInfo(modelId, files.vocoder, 'vocoder');
    const type = info.metadata.model_type;
    if (type === undefined || !VOCODER_TYPES.includes(type))
      throw modelError(
        modelId,
        `${files.vocoder} is not a vocoder sherpa-onnx can run (metadata model_type ${type === undefined ? 'missing' : `"${type}"`}; expected vocos or hifigan); download one from ${VOCODERS_URL}`,
      );
    const rate = info.metadata.sample_rate;
    if (rate !== undefined && rate !== meta.sample_rate)
      throw modelError(
        modelId,
        `the vocoder ${files.vocoder} is for ${rate} Hz but the acoustic model is ${meta.sample_rate} Hz; use the matching vocoder (e.g. vocos-16khz-univ.onnx for 16 kHz models)`,
      );
    vocoder = files.vocoder;
  }

  // sherpa picks the text front end from the metadata: espeak phonemes (English), a lexicon
  // (Chinese), or both (the Chinese+English model, voice "zh en-us").
  const espeak = meta.has_espeak === '1';
  const jieba = meta.jieba === '1';
  const mixed = meta.voice === 'zh en-us';
  if (!mixed && espeak === jieba)
    throw modelError(
      modelId,
      `${files.acousticModel}: sherpa-onnx supports Matcha models that use espeak (has_espeak=1) or a lexicon (jieba=1), not has_espeak=${meta.has_espeak ?? 0}, jieba=${meta.jieba ?? 0}`,
    );
  const needsLexicon = mixed || jieba;
  if (needsLexicon && !files.lexicon)
    throw modelError(modelId, `${FAMILY} model folder ${dir} is missing: lexicon (lexicon.txt)`);
  const matcha = {
    acousticModel: files.acousticModel,
    vocoder,
    tokens: files.tokens,
    ...(mixed || espeak ? { dataDir: await espeakDataDir(modelId, dir) } : {}),
    ...(needsLexicon ? { lexicon: files.lexicon } : {}),
  };
  return {
    model: { matcha, numThreads: 1, debug: false },
    maxNumSentences: 1,
    ...(needsLexicon ? await ruleFiles(dir) : {}),
  };
}

export const createMatchaFamily = () =>
  new SherpaTtsFamily({
    name: FAMILY,
    params: [
      { name: 'voice', type: 'string', description: 'speaker number of a multi-speaker model', default: '0' },
    ],
    setup: async (spec) => ({ config: await matchaConfig(spec) }),
  });
