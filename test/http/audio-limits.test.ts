/**
 * Input audio is bounded before it is decoded (issue 10, defect 2: a 10 KB WAV declaring 1 Hz took
 * 30 s and 2.4 GB): sample rates outside 1-384 kHz are a 400, audio longer than max_audio_seconds
 * is a 413 found from the header, and a server file larger than max_request_body_bytes is a 413
 * before a byte of it is read. Time and memory bounds here are generous; the failures they catch
 * took tens of seconds and gigabytes.
 */

import assert from 'node:assert/strict';
import { closeSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { runInNewContext } from 'node:vm';
import { floats } from '../../src/audio/pcm16-audio.js';
import { suiteServer } from '../helpers/suite-server.js';
import {
  errorOf,
  fixtureModel,
  get,
  type HttpResult,
  post,
  reportOf,
  request,
  waitUntil,
  withDeadline,
} from '../helpers/voxd.js';
import { buildWav, smallWav, wavHeader } from './wav-helpers.js';

/** A 16-bit mono WAV header declaring `rate` and `dataBytes` of samples (which may not all be there). */
const wavHeaderOf = (rate: number, dataBytes: number) =>
  wavHeader({ sampleRate: rate, channels: 1, bits: 16 }, dataBytes);

/** A sparse file of `size` bytes starting with `head`: large on paper, nothing on disk. */
function sparseFile(path: string, head: Buffer, size: number): void {
  const fd = openSync(path, 'w');
  writeSync(fd, head, 0, head.length, 0);
  writeSync(fd, Buffer.alloc(1), 0, 1, size - 1);
  closeSync(fd);
}

function upload(base: string, model: string, wav: Buffer): Promise<HttpResult> {
  const form = new FormData();
  form.set('model', model);
  form.set('file', new Blob([wav]), 'a.wav');
  return request(base, 'POST', '/v1/audio/transcriptions', { body: form });
}

describe('input audio limits', () => {
  const server = suiteServer({
    max_audio_seconds: 600,
    models: [
      fixtureModel('asr'),
      fixtureModel('short', { max_audio_seconds: 1 }),
      fixtureModel('long', { max_audio_seconds: 3600 }),
    ],
  });
  const run = (model: string, request: Record<string, unknown>) =>
    post(server.url, '/v1/tasks/run', { model, request });

  async function assertHealthy(): Promise<void> {
    assert.equal((await get(server.url, '/health')).status, 200);
    assert.equal((await upload(server.url, 'asr', smallWav(320))).status, 200, 'a normal request is served');
  }

  test('a WAV declaring 1 Hz (10 KB and 100 KB) is a 400 from its header, by upload, base64 and path', async () => {
    for (const bytes of [10_000, 100_000]) {
      const wav = Buffer.concat([wavHeaderOf(1, bytes), Buffer.alloc(bytes)]);
      const uploaded = errorOf(await upload(server.url, 'asr', wav), 400, 'invalid_request_error');
      assert.equal(uploaded, 'file: unsupported WAV: sample rate 1 Hz; expected 1000..384000 Hz');
      const base64 = await run('asr', { audio_base64: wav.toString('base64') });
      assert.ok(
        errorOf(base64, 400, 'invalid_request_error').startsWith(
          'audio_base64: unsupported WAV: sample rate 1 Hz',
        ),
      );
      const path = join(server.dir, `one-hz-${bytes}.wav`);
      sparseFile(path, wavHeaderOf(1, bytes), 44 + bytes);
      assert.ok(
        errorOf(await run('asr', { audio: path }), 400, 'invalid_request_error').startsWith(
          'audio: unsupported WAV',
        ),
      );
    }
    await assertHealthy();
  });

  test('audio longer than max_audio_seconds is a 413 naming the limit: the model overrides the server', async () => {
    const twoSeconds = smallWav(32_000);
    const message = errorOf(await upload(server.url, 'short', twoSeconds), 413, 'invalid_request_error');
    assert.equal(message, 'file: the audio is 2 s long; the limit is max_audio_seconds=1 (server or model)');
    assert.equal(
      (await upload(server.url, 'short', smallWav(16_000))).status,
      200,
      'exactly the limit is fine',
    );
    assert.equal((await upload(server.url, 'asr', twoSeconds)).status, 200, 'the server limit is 600 s');
    const base64 = await run('short', { audio_base64: twoSeconds.toString('base64') });
    errorOf(base64, 413, 'invalid_request_error');
  });

  test('a huge server file is refused from its header, never read: 200 MB declared long, 1.5 GB over the size limit', async () => {
    const before = process.memoryUsage().rss;
    const long = join(server.dir, 'long.wav');
    sparseFile(long, wavHeaderOf(16_000, 200_000_000), 200_000_044); // 6,250 s of 16 kHz audio
    const tooLong = await withDeadline(run('asr', { audio: long }), 'the long file', 5000);
    assert.equal(
      errorOf(tooLong, 413, 'invalid_request_error'),
      'audio: the audio is 6250 s long; the limit is max_audio_seconds=600 (server or model)',
    );
    const huge = join(server.dir, 'huge.wav');
    sparseFile(huge, wavHeaderOf(16_000, 0xffffffff), 1_500_000_000);
    const tooBig = await withDeadline(run('asr', { audio: huge }), 'the huge file', 5000);
    assert.equal(
      errorOf(tooBig, 413, 'invalid_request_error'),
      `audio: the file is 1500000000 bytes; the limit is max_request_body_bytes=${256 * 1024 * 1024}`,
    );
    const grown = (process.memoryUsage().rss - before) / 1e6;
    assert.ok(grown < 100, `resident memory grew by ${grown.toFixed(0)} MB`);
    await assertHealthy();
  });

  test('the memory a large request used is given back after it (release-memory.ts)', async () => {
    const frames = 20 * 60 * 16_000; // 20 min: 38 MB of WAV, 77 MB of decoded samples
    const path = join(server.dir, 'twenty-minutes.wav');
    const fd = openSync(path, 'w');
    writeSync(fd, wavHeaderOf(16_000, frames * 2));
    writeSync(fd, Buffer.alloc(frames * 2, 1));
    closeSync(fd);
    await run('long', { audio: path }); // warm: the worker threads exist from here on
    // A clean baseline: release-memory.ts exposed gc() to new contexts.
    (runInNewContext('gc') as () => void)();
    const before = process.memoryUsage().rss;
    assert.equal(reportOf(await run('long', { audio: path })).audio.samples, frames);
    // Without the release step the samples stay resident until some later collection.
    await waitUntil(
      'resident memory back within 40 MB of its level before the request',
      () => process.memoryUsage().rss < before + 40e6,
      5000,
    );
  });

  test('a long file under the limits is decoded on a worker, piece by piece, to the right samples', async () => {
    const frames = 40 * 16_000; // 40 s: 1.28 MB of samples, past the inline limit
    const wav = buildWav({
      sampleRate: 16_000,
      channels: 1,
      bits: 16,
      frames,
      sample: (f) => ((f % 100) - 50) / 100,
    });
    const path = join(server.dir, 'forty.wav');
    const fd = openSync(path, 'w');
    writeSync(fd, wav);
    closeSync(fd);
    const report = reportOf(await run('asr', { audio: path }));
    assert.equal(report.audio.samples, frames);
    const uploaded = reportOf(await upload(server.url, 'asr', wav));
    assert.deepEqual(uploaded.audio, report.audio, 'a spooled upload decodes to the same audio as the file');
  });
});

test('decoding from a file, piece by piece on a worker, gives exactly the samples of decoding the bytes', async () => {
  const { decodeAudio } = await import('../../src/audio/input.js');
  const { decodeWav } = await import('../../src/audio/wav-decode.js');
  const { open, rm, writeFile } = await import('node:fs/promises');
  const { tempDir } = await import('../helpers/voxd.js');
  const dir = tempDir();
  try {
    // 24-bit stereo: 6-byte frames, so the 1 MiB pieces must be cut on frame boundaries.
    const frames = 300_000;
    const wav = buildWav({
      sampleRate: 44_100,
      channels: 2,
      bits: 24,
      frames,
      sample: (f, c) => Math.sin(f / (7 + c)),
    });
    const path = join(dir, 'a.wav');
    await writeFile(path, wav);
    const file = await open(path, 'r');
    try {
      const fromFile = await decodeAudio({ file, size: wav.length }, 'audio', {
        maxSeconds: 0,
        maxBytes: wav.length,
      });
      const fromBytes = decodeWav(wav);
      assert.equal(floats(fromFile).length, frames * 2);
      assert.deepEqual(floats(fromFile), floats(fromBytes));
    } finally {
      await file.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
