import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createEngineCatalog } from '../../src/engines/catalog.js';
import {
  artifactUrl,
  catalogPackages,
  checkPackageId,
  findPackage,
  PACKAGE_ID,
  sourceBaseUrl,
} from '../../src/models/catalog.js';

test('every package has a valid unique id, a known family, a task and something to download', () => {
  const families = createEngineCatalog();
  const ids = new Set<string>();
  for (const pkg of catalogPackages()) {
    assert.match(pkg.id, PACKAGE_ID);
    assert.ok(!ids.has(pkg.id), `duplicate id ${pkg.id}`);
    ids.add(pkg.id);
    const family = families.get(pkg.family);
    assert.ok(family, `${pkg.id}: unknown family ${pkg.family}`);
    assert.ok((family.tasks as readonly string[]).includes(pkg.task), `${pkg.id}: task ${pkg.task}`);
    const parts = [...(pkg.archive ? [pkg.archive] : []), ...(pkg.files ?? [])];
    assert.ok(parts.length > 0, pkg.id);
    for (const part of parts) {
      assert.ok(part.source === 'github' || part.source === 'huggingface');
      assert.ok(!/^[a-z]+:/.test(part.url), `${pkg.id}: url is relative`);
      assert.ok(part.sha256 === null || /^[0-9a-f]{64}$/.test(part.sha256));
    }
    for (const file of pkg.files ?? []) assert.ok(file.name && !file.name.includes('/'), pkg.id);
    assert.ok(pkg.licence && pkg.homepage && pkg.description.includes('unverified'));
  }
  assert.ok(ids.size >= 15);
});

test('source bases: the catalogue default, overridden by VOXD_GITHUB_BASE_URL / VOXD_HF_BASE_URL', () => {
  assert.equal(sourceBaseUrl('github', {}), 'https://github.com/k2-fsa/sherpa-onnx/releases/download');
  assert.equal(sourceBaseUrl('huggingface', {}), 'https://huggingface.co');
  const env = { VOXD_GITHUB_BASE_URL: 'http://127.0.0.1:9/gh/', VOXD_HF_BASE_URL: 'http://mirror/hf' };
  const whisper = findPackage('whisper-base.en')!;
  assert.equal(
    artifactUrl(whisper.archive!, {}),
    'https://github.com/k2-fsa/sherpa-onnx/releases/download/asr-models/sherpa-onnx-whisper-base.en.tar.bz2',
  );
  assert.equal(
    artifactUrl(whisper.archive!, env),
    'http://127.0.0.1:9/gh/asr-models/sherpa-onnx-whisper-base.en.tar.bz2',
  );
  assert.equal(sourceBaseUrl('huggingface', env), 'http://mirror/hf');
});

test('checkPackageId refuses what could escape the models root', () => {
  assert.equal(checkPackageId('kokoro-en-v0_19'), 'kokoro-en-v0_19');
  assert.equal(checkPackageId('whisper-base.en'), 'whisper-base.en');
  for (const bad of [
    '',
    '.',
    '..',
    '.partial',
    '.voxd-package.json',
    'a/b',
    'a\\b',
    'x'.repeat(129),
    7,
    null,
  ])
    assert.throws(() => checkPackageId(bad), { code: 'E_INVALID_REQUEST' });
});
