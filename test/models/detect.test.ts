import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { createEngineCatalog } from '../../src/engines/catalog.js';
import { detectFamily, recogniseAs } from '../../src/models/detect.js';
import { FIXTURES } from './archives.js';

const expected: Record<string, string> = {
  'fake-canary': 'canary_asr',
  'fake-kokoro': 'kokoro_tts',
  'fake-kokoro-multi-lang': 'kokoro_tts',
  'fake-matcha': 'matcha_tts',
  'fake-matcha-builtin-vocoder': 'matcha_tts',
  'fake-matcha-zh': 'matcha_tts',
  'fake-nemo-ctc': 'nemo_ctc_asr',
  'fake-parakeet-tdt': 'parakeet_tdt',
  'fake-piper': 'piper_tts',
  'fake-pyannote': 'pyannote_diar',
  'fake-sense-voice': 'sense_voice_asr',
  'fake-whisper': 'whisper_asr',
  'fake-whisper-en': 'whisper_asr',
};

test('each fake model folder is detected as its family, from file names and metadata only', async () => {
  const catalog = createEngineCatalog();
  for (const [fixture, family] of Object.entries(expected)) {
    const found = await detectFamily(catalog, join(FIXTURES, fixture));
    assert.equal(found.family, family, fixture);
    assert.equal(found.path, join(FIXTURES, fixture));
  }
});

test('a folder no family recognises, and a family that does not recognise a folder, say why', async () => {
  const catalog = createEngineCatalog();
  await assert.rejects(detectFamily(catalog, join(FIXTURES, 'fake-canary-fp32')), {
    code: 'E_PACKAGE_UNRECOGNISED',
  });
  await assert.rejects(recogniseAs(catalog, 'whisper_asr', join(FIXTURES, 'fake-piper')), (err: Error) => {
    assert.equal((err as { code?: string }).code, 'E_PACKAGE_UNRECOGNISED');
    assert.match(err.message, /whisper_asr does not recognise .*missing: encoder/);
    return true;
  });
});

test('silero_vad recognises a folder with one silero ONNX file and loads that file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'voxd-silero-'));
  try {
    writeFileSync(join(dir, 'silero_vad.onnx'), 'x');
    const found = await recogniseAs(createEngineCatalog(), 'silero_vad', dir);
    assert.equal(found.path, join(dir, 'silero_vad.onnx'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
