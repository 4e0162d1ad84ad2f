/** Model folders as sherpa-onnx distributes them: the files a family needs, each missing one named. */
import { access, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { VoxdError } from '../errors.js';

/** The model file and tokens of a sherpa model folder; every missing file is named in the error. */
export async function findOnnxAndTokens(
  modelId: string,
  family: string,
  dir: string,
): Promise<{ model: string; tokens: string }> {
  const fail = (what: string) => new VoxdError('E_INVALID_REQUEST', `model '${modelId}': ${what}`);
  if (!dir) throw fail(`${family} needs "path": the model folder (model .onnx and tokens.txt)`);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    throw fail(`model folder not found: ${dir}`);
  }
  const onnx = names.filter((n) => n.endsWith('.onnx'));
  if (onnx.length !== 1)
    throw fail(`expected exactly one .onnx file in ${dir}, found ${onnx.length ? onnx.join(', ') : 'none'}`);
  const tokens = join(dir, 'tokens.txt');
  try {
    await access(tokens);
  } catch {
    throw fail(`missing file: ${tokens}`);
  }
  return { model: join(dir, onnx[0]!), tokens };
}
