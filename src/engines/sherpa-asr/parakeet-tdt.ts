/**
 * `parakeet_tdt`: NVIDIA Parakeet TDT (a NeMo transducer) as sherpa-onnx distributes it: a folder
 * with encoder, decoder and joiner (`.onnx` or `.int8.onnx`) and `tokens.txt`.
 */
import { readFile } from 'node:fs/promises';
import type { OptionMap } from '../../config/types.js';
import { invalidRequest } from '../../errors.js';
import { numberOption } from '../engine-options.js';
import { readOnnxMetadata } from '../onnx-info.js';
import { type FileRole, type FolderFiles, TOKENS } from '../sherpa-model-folder.js';
import { SherpaRecognizerFamily } from './recognizer-family.js';
import { pieceWords } from './token-words.js';

const part = (name: string): FileRole => ({
  pattern: new RegExp(`(^|[-_.])${name}(\\.int8)?\\.onnx$`),
  describe: `${name}.onnx or ${name}.int8.onnx`,
});

type Role = 'encoder' | 'decoder' | 'joiner' | 'tokens';

const DECODING_METHODS = ['greedy_search', 'modified_beam_search'];

/** The encoder metadata sherpa's NeMo transducer reads without a default (it exits when one is missing). */
const REQUIRED_METADATA = ['vocab_size', 'subsampling_factor', 'pred_rnn_layers', 'pred_hidden'];

/**
 * Checks what sherpa would otherwise check by ending the process: readable ONNX files, the
 * encoder's metadata, and a tokens.txt whose last entry is the blank `<blk>`, one per vocab entry.
 */
async function checkFolder(files: FolderFiles<Role>, modelId: string): Promise<void> {
  const fail = (what: string) => invalidRequest(`model '${modelId}': ${what}`);
  const metadata = await Promise.all(
    [files.encoder, files.decoder, files.joiner].map((path) =>
      readOnnxMetadata(path).catch((err: Error) => {
        throw fail(`${path} could not be read as an ONNX model: ${err.message}`);
      }),
    ),
  );
  const encoder = metadata[0]!;
  const missing = REQUIRED_METADATA.filter((key) => !/^\d+$/.test(encoder.get(key) ?? ''));
  if (missing.length > 0)
    throw fail(
      `${files.encoder} is not a NeMo transducer encoder exported for sherpa-onnx: its metadata lacks ${missing.join(', ')}`,
    );
  const vocab = Number(encoder.get('vocab_size')) + 1; // NeMo does not count the blank
  const lines = (await readFile(files.tokens, 'utf8')).split('\n').filter((line) => line.trim() !== '');
  const blank = lines.findIndex((line) => line.trim().split(/\s+/)[0] === '<blk>');
  if (
    lines.length !== vocab ||
    blank === -1 ||
    lines[blank]!.trim().split(/\s+/).at(-1) !== String(vocab - 1)
  )
    throw fail(
      `${files.tokens} does not match the encoder: expected ${vocab} tokens (vocab_size ${vocab - 1} plus <blk>) ending with "<blk> ${vocab - 1}", found ${lines.length} tokens${blank === -1 ? ' and no <blk>' : ''}`,
    );
}

function decoding(loadOptions: OptionMap, modelId: string): Record<string, unknown> {
  const method = loadOptions['decoding_method'] ?? 'greedy_search';
  if (!DECODING_METHODS.includes(method))
    throw invalidRequest(
      `model '${modelId}': load_options.decoding_method: "${method}" is invalid; expected ${DECODING_METHODS.join(' or ')}`,
    );
  const paths = numberOption(loadOptions, 'max_active_paths', {
    where: 'load_options.',
    min: 1,
    max: 64,
    integer: true,
  });
  return { decodingMethod: method, maxActivePaths: paths ?? 4 };
}

export const createParakeetTdtFamily = () =>
  new SherpaRecognizerFamily<Role>({
    name: 'parakeet_tdt',
    files: { encoder: part('encoder'), decoder: part('decoder'), joiner: part('joiner'), tokens: TOKENS },
    modelConfig: ({ encoder, decoder, joiner }) => ({
      transducer: { encoder, decoder, joiner },
      modelType: 'nemo_transducer',
    }),
    prepare: (files, _loadOptions, modelId) => checkFolder(files, modelId),
    recognizerConfig: (_files, loadOptions, modelId) => decoding(loadOptions, modelId),
    words: pieceWords,
  });
