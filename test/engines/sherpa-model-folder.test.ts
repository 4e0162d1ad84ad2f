import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { ANY_ONNX, findModelFiles, precisionOption, TOKENS } from '../../src/engines/sherpa-model-folder.js';
import { tempDir } from '../helpers/voxd.js';

const ENCODER = { pattern: /(^|[-_.])encoder(\.int8)?\.onnx$/, describe: '*encoder.onnx' };
const DECODER = { pattern: /(^|[-_.])decoder(\.int8)?\.onnx$/, describe: '*decoder.onnx' };
const LEXICON = { pattern: /^lexicon\.txt$/, describe: 'lexicon.txt', optional: true };
const DATA = { pattern: /^espeak-ng-data$/, describe: 'espeak-ng-data/', directory: true };

describe('sherpa model folders', () => {
  const root = tempDir('voxd-folder-');
  after(() => rmSync(root, { recursive: true, force: true }));
  const folder = (name: string, files: string[], dirs: string[] = []) => {
    const dir = join(root, name);
    mkdirSync(dir);
    for (const f of files) writeFileSync(join(dir, f), '');
    for (const d of dirs) mkdirSync(join(dir, d));
    return dir;
  };

  test('finds prefixed files, optional files and folders', async () => {
    const dir = folder(
      'whisper',
      ['tiny.en-encoder.onnx', 'tiny.en-decoder.onnx', 'tiny.en-tokens.txt'],
      ['espeak-ng-data'],
    );
    const files = await findModelFiles('m', 'fam', dir, {
      encoder: ENCODER,
      decoder: DECODER,
      tokens: TOKENS,
      lexicon: LEXICON,
      data: DATA,
    });
    assert.deepEqual(files, {
      encoder: join(dir, 'tiny.en-encoder.onnx'),
      decoder: join(dir, 'tiny.en-decoder.onnx'),
      tokens: join(dir, 'tiny.en-tokens.txt'),
      data: join(dir, 'espeak-ng-data'),
    });
  });

  test('the precision option picks between fp32 and int8 copies; fp32 by default', async () => {
    const dir = folder('both', ['model.onnx', 'model.int8.onnx', 'tokens.txt']);
    const roles = { model: ANY_ONNX, tokens: TOKENS };
    assert.equal((await findModelFiles('m', 'fam', dir, roles)).model, join(dir, 'model.onnx'));
    assert.equal((await findModelFiles('m', 'fam', dir, roles, 'int8')).model, join(dir, 'model.int8.onnx'));
    const int8only = folder('int8only', ['encoder.int8.onnx', 'decoder.int8.onnx', 'tokens.txt']);
    const found = await findModelFiles('m', 'fam', int8only, {
      encoder: ENCODER,
      decoder: DECODER,
      tokens: TOKENS,
    });
    assert.equal(
      found.encoder,
      join(int8only, 'encoder.int8.onnx'),
      'the only copy is used whatever the precision',
    );
    assert.equal(precisionOption('m', {}), 'fp32');
    assert.equal(precisionOption('m', { precision: 'int8' }), 'int8');
    assert.throws(
      () => precisionOption('m', { precision: 'fp16' }),
      /load_options\.precision: "fp16" is invalid; expected fp32 or int8/,
    );
  });

  test('every missing file is named in one error; ambiguity and a missing folder are errors', async () => {
    const dir = folder('partial', ['decoder.onnx']);
    await assert.rejects(
      findModelFiles('m', 'whisper_asr', dir, {
        encoder: ENCODER,
        decoder: DECODER,
        tokens: TOKENS,
        data: DATA,
      }),
      (err: Error) =>
        err.message ===
        `model 'm': whisper_asr model folder ${dir} is missing: encoder (*encoder.onnx), tokens (tokens.txt), data (espeak-ng-data/)`,
    );
    const two = folder('two', ['a.onnx', 'b.onnx', 'tokens.txt']);
    await assert.rejects(
      findModelFiles('m', 'fam', two, { model: ANY_ONNX, tokens: TOKENS }),
      /has several files for model \(a\.onnx, b\.onnx\); keep one/,
    );
    await assert.rejects(
      findModelFiles('m', 'fam', join(root, 'nope'), { model: ANY_ONNX }),
      /model folder not found: .*nope/,
    );
    await assert.rejects(
      findModelFiles('m', 'fam', '', { model: ANY_ONNX, tokens: TOKENS }),
      /fam needs "path": the model folder \(a \.onnx model file, tokens\.txt\)/,
    );
  });
});
