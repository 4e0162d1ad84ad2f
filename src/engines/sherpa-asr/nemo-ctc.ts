/** `nemo_ctc_asr`: NeMo CTC models (a folder with `model.onnx` and `tokens.txt`). */
import { ANY_ONNX, TOKENS } from '../sherpa-model-folder.js';
import { SherpaRecognizerFamily } from './recognizer-family.js';

export const createNemoCtcFamily = () =>
  new SherpaRecognizerFamily({
    name: 'nemo_ctc_asr',
    files: { model: ANY_ONNX, tokens: TOKENS },
    modelConfig: ({ model }) => ({ nemoCtc: { model } }),
  });
