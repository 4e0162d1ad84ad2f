/**
 * `nemo_ctc_asr`: NeMo CTC models as sherpa-onnx distributes them (a folder with `model.onnx` and/or
 * `model.int8.onnx`, and `tokens.txt`), decoded greedily.
 */
import { readFile } from 'node:fs/promises';
import { invalidRequest } from '../../errors.js';
import { readOnnxMetadata } from '../onnx-info.js';
import { ANY_ONNX, type FolderFiles, TOKENS } from '../sherpa-model-folder.js';
import { SherpaRecognizerFamily } from './recognizer-family.js';

/** The metadata sherpa reads without a default; it ends the process when one is missing (0 divides). */
const REQUIRED_METADATA = ['vocab_size', 'subsampling_factor'];
/** sherpa's CTC decoder takes its blank from one of these symbols and ends the process without one. */
const BLANKS = ['<blk>', '<eps>', '<blank>'];

/** Checks what sherpa would otherwise check by ending the process. */
async function checkFolder(files: FolderFiles<'model' | 'tokens'>, modelId: string): Promise<void> {
  const fail = (what: string) => invalidRequest(`model '${modelId}': ${what}`);
  const metadata = await readOnnxMetadata(files.model).catch((err: Error) => {
    throw fail(`${files.model} could not be read as an ONNX model: ${err.message}`);
  });
  const missing = REQUIRED_METADATA.filter((key) => !/^[1-9]\d*$/.test(metadata.get(key) ?? ''));
  if (missing.length > 0)
    throw fail(
      `${files.model} is not a NeMo CTC model exported for sherpa-onnx: its metadata lacks a positive ${missing.join(', ')}`,
    );
  const symbols = (await readFile(files.tokens, 'utf8'))
    .split('\n')
    .map((line) => line.trim().split(/\s+/)[0]);
  if (!symbols.some((symbol) => BLANKS.includes(symbol!)))
    throw fail(
      `${files.tokens} has no blank token: a CTC model's tokens include one of ${BLANKS.join(', ')}`,
    );
}

export const createNemoCtcFamily = () =>
  new SherpaRecognizerFamily({
    name: 'nemo_ctc_asr',
    files: { model: ANY_ONNX, tokens: TOKENS },
    prepare: (files, _loadOptions, modelId) => checkFolder(files, modelId),
    modelConfig: ({ model }) => ({ nemoCtc: { model } }),
  });
