/**
 * Model folders as sherpa-onnx distributes them: the files a family needs, found by name, with
 * every missing file named in one error. Folders often hold a model in two precisions
 * (`encoder.onnx` and `encoder.int8.onnx`); the `precision` load option picks one.
 */
import { readdir, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { OptionMap } from '../config/types.js';
import { VoxdError } from '../errors.js';
import type { LoadSpec } from './types.js';

/** One file (or folder) a family needs. */
export interface FileRole {
  /** File names that fill this role, e.g. /(^|[-_.])encoder(\.int8)?\.onnx$/. */
  pattern: RegExp;
  /** How the error names it when it is missing, e.g. "*encoder.onnx". */
  describe: string;
  /** A role that may be absent (its value is then undefined). */
  optional?: boolean;
  /** A folder (espeak-ng-data) rather than a file. */
  directory?: boolean;
}

export type FolderFiles<R extends string> = { [K in R]: string };

export const PRECISIONS = ['fp32', 'int8'] as const;
export type Precision = (typeof PRECISIONS)[number];

function folderError(modelId: string, what: string): VoxdError {
  return new VoxdError('E_INVALID_REQUEST', `model '${modelId}': ${what}`);
}

/** The `precision` load option: which of two precisions of the same file to load (default fp32). */
export function precisionOption(modelId: string, loadOptions: OptionMap): Precision {
  const value = loadOptions.precision ?? 'fp32';
  if (!(PRECISIONS as readonly string[]).includes(value))
    throw folderError(modelId, `load_options.precision: "${value}" is invalid; expected fp32 or int8`);
  return value as Precision;
}

const isInt8 = (name: string) => /[._-]int8\./.test(name);

/**
 * Finds each role's file in `dir`. When two files match a role, the one of the requested precision
 * wins; a role still matched by several files is an error naming them, so voxd never guesses.
 */
export async function findModelFiles<R extends string>(
  modelId: string,
  family: string,
  dir: string,
  roles: Record<R, FileRole>,
  precision: Precision = 'fp32',
): Promise<FolderFiles<R>> {
  const wanted = Object.values<FileRole>(roles)
    .filter((r) => !r.optional)
    .map((r) => r.describe)
    .join(', ');
  if (!dir) throw folderError(modelId, `${family} needs "path": the model folder (${wanted})`);
  let entries: { name: string; directory: boolean }[];
  try {
    const names = await readdir(dir);
    entries = await Promise.all(
      names.map(async (name) => ({ name, directory: (await stat(join(dir, name))).isDirectory() })),
    );
  } catch {
    throw folderError(modelId, `model folder not found: ${dir}`);
  }
  const found: Partial<Record<R, string>> = {};
  const missing: string[] = [];
  for (const [role, spec] of Object.entries(roles) as [R, FileRole][]) {
    let matches = entries
      .filter((e) => e.directory === Boolean(spec.directory) && spec.pattern.test(e.name))
      .map((e) => e.name);
    if (matches.length > 1) {
      const preferred = matches.filter((n) => isInt8(n) === (precision === 'int8'));
      if (preferred.length > 0) matches = preferred;
    }
    if (matches.length > 1)
      throw folderError(
        modelId,
        `${dir} has several files for ${role} (${matches.sort().join(', ')}); keep one`,
      );
    if (matches.length === 1) found[role] = join(dir, matches[0]!);
    else if (!spec.optional) missing.push(`${role} (${spec.describe})`);
  }
  if (missing.length > 0)
    throw folderError(modelId, `${family} model folder ${dir} is missing: ${missing.join(', ')}`);
  return found as FolderFiles<R>;
}

/**
 * The LoadSpec a family's folder checks see when the installer asks whether it recognises `dir`:
 * default options, the folder's name as the model id (it names the folder in errors).
 */
export function recogniseSpec(dir: string): LoadSpec {
  return {
    modelId: basename(dir),
    path: dir,
    task: 'asr',
    mode: 'offline',
    loadOptions: {},
    backend: 'cpu',
    device: 0,
    threads: 1,
    isolation: 'model',
  };
}

/** The common roles: a `tokens.txt` (possibly prefixed, as whisper's `tiny.en-tokens.txt`). */
export const TOKENS: FileRole = { pattern: /(^|[-_.])tokens\.txt$/, describe: 'tokens.txt' };

/** A single-file model: `model.onnx` or any one `*.onnx` (piper voices are named after the voice). */
export const ANY_ONNX: FileRole = { pattern: /\.onnx$/, describe: 'a .onnx model file' };
