/**
 * Decoded audio is bounded by bytes, not by what the file declares (issue 22): a 107 KB FLAC
 * declaring 384 kHz and 7.1 channels for 60 s took the server to 3.67 GB (ffmpeg's whole output
 * collected, then copied and converted again). It is read as it comes now, at most 48 kHz, mixed to
 * mono as it arrives, and stopped at the limits. The peak is read from a real `voxd serve` child
 * (VmHWM after writing 5 to /proc/PID/clear_refs).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { configFolder, VoxdProcess } from '../helpers/cli.js';
import { errorOf, fixtureModel, reportOf, request, withDeadline, withServer } from '../helpers/voxd.js';

/** The peak the server may reach for this upload, with a wide margin over what it takes (~130 MB). */
const PEAK_LIMIT_MB = 300;

const folder = configFolder('voxd-decode-memory-');
let voxd: VoxdProcess;
let url: string;
let bomb: Buffer;

before(async () => {
  const path = join(folder.dir, 'bomb.flac');
  execFileSync('ffmpeg', [
    ...['-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', 'anullsrc=r=384000:cl=7.1'],
    ...['-t', '60', '-c:a', 'flac', '-compression_level', '0', path],
  ]);
  bomb = readFileSync(path);
  assert.ok(bomb.length < 200_000, `the bomb is small: ${bomb.length} bytes`);
  const config = folder.write({
    ui: false,
    models: [
      { id: 'asr', family: 'fixture', path: '.', task: 'asr' },
      { id: 'short', family: 'fixture', path: '.', task: 'asr', max_audio_seconds: 30 },
    ],
  });
  voxd = new VoxdProcess(['serve', '--config', config, '--port', '0']);
  ({ url } = await voxd.listening());
});
after(async () => {
  await voxd?.stop();
});

function megabytes(key: 'VmHWM' | 'VmRSS'): number {
  const status = readFileSync(`/proc/${voxd.child.pid}/status`, 'utf8');
  return Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)![1]) / 1024;
}

async function uploadPeak(model: string, extra: Record<string, string> = {}) {
  writeFileSync(`/proc/${voxd.child.pid}/clear_refs`, '5');
  const form = new FormData();
  form.set('model', model);
  for (const [k, v] of Object.entries(extra)) form.set(k, v);
  form.set('file', new Blob([bomb]), 'bomb.flac');
  const res = await withDeadline(
    request(url, 'POST', '/v1/audio/transcriptions', { body: form }),
    'the bomb',
    120_000,
  );
  return { res, peakMb: megabytes('VmHWM') };
}

test('the FLAC bomb over max_audio_seconds: 413, and the server peaks far below the 3.7 GB it took', async () => {
  const { res, peakMb } = await uploadPeak('short');
  const message = errorOf(res, 413, 'invalid_request_error');
  assert.equal(message, 'file: the decoded audio is longer than max_audio_seconds=30 (server or model)');
  assert.ok(peakMb < PEAK_LIMIT_MB, `peak ${peakMb.toFixed(0)} MB`);
});

test('the FLAC bomb with the default limits: 60 s of mono at 48 kHz, transcribed within the same bound', async () => {
  const { res, peakMb } = await uploadPeak('asr');
  const report = reportOf(res);
  // 60 s at the fixture's 16 kHz: the declared 384 kHz and eight channels are gone.
  assert.equal(report.audio.samples, 960_000);
  assert.equal(report.audio.channels, 1);
  assert.ok(peakMb < PEAK_LIMIT_MB, `peak ${peakMb.toFixed(0)} MB`);
});

test('decoded samples past max_request_body_bytes: 413 naming it, however few bytes were uploaded', async () => {
  // 4 MB hold 1,000,000 mono samples: under 21 s at 48 kHz, of the bomb's 60.
  await withServer({ max_request_body_bytes: 4_000_000, models: [fixtureModel('asr')] }, async (s) => {
    const form = new FormData();
    form.set('model', 'asr');
    form.set('file', new Blob([bomb]), 'bomb.flac');
    const res = await request(s.url, 'POST', '/v1/audio/transcriptions', { body: form });
    const message = errorOf(res, 413, 'invalid_request_error');
    assert.equal(res.json.error.code, 'audio_too_long');
    assert.match(
      message,
      /^file: the decoded audio is larger than max_request_body_bytes=4000000 \(4 bytes a mono sample/,
    );
  });
});
