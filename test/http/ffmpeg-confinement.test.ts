/**
 * ffmpeg reads audio containers only (issue 22): an HLS playlist, a DASH manifest or an ffconcat
 * list uploaded as the audio (multipart or base64, with an inference key) named a server file
 * outside the file roots, and ffmpeg decoded it, so its transcript came back. Live playlists held
 * every ffmpeg child until ffmpeg_timeout_ms, an ffconcat naming itself reopened itself until
 * EMFILE, and ffmpeg's pointer addresses reached the client. Each is answered now with a 400 that
 * names the format, at once.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { childrenNamed, suiteStandInFfmpeg } from '../helpers/stand-in-ffmpeg.js';
import { suiteServer } from '../helpers/suite-server.js';
import {
  errorOf,
  fixtureModel,
  type HttpResult,
  reportOf,
  request,
  waitUntil,
  withDeadline,
  withServer,
} from '../helpers/voxd.js';

const KEY = 'sk-voxd-inference-only-22';
const AUTH = { Authorization: `Bearer ${KEY}` };
/** Long enough that a child held until it runs out shows as a hang, not a slow answer. */
const FFMPEG_TIMEOUT_MS = 600_000;

function ffmpeg(args: string[]): void {
  execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', ...args]);
}

/** ffmpeg children of this process (the server runs in it). */
const ffmpegChildren = () => childrenNamed(['ffmpeg', 'sleep']);

function upload(base: string, bytes: Buffer, filename: string): Promise<HttpResult> {
  const form = new FormData();
  form.set('model', 'asr');
  form.set('file', new Blob([bytes]), filename);
  return request(base, 'POST', '/v1/audio/transcriptions', { body: form, headers: AUTH });
}

function base64Task(base: string, bytes: Buffer): Promise<HttpResult> {
  return request(base, 'POST', '/v1/tasks/run', {
    body: JSON.stringify({ model: 'asr', audio_base64: bytes.toString('base64') }),
    headers: { ...AUTH, 'Content-Type': 'application/json' },
  });
}

/** A 400 that names the refused format, with no transcript and no pointer address in it. */
function assertRefused(res: HttpResult, field: string, format: string, what: string): void {
  const text = res.body.toString();
  assert.equal(res.status, 400, `${what}: ${res.status} ${text.slice(0, 300)}`);
  assert.ok(!text.includes('samples'), `${what}: no transcript: ${text}`);
  const message = errorOf(res, 400, 'invalid_request_error');
  assert.ok(message.startsWith(`${field}: the format "${format}" is not accepted`), `${what}: ${message}`);
  assert.doesNotMatch(message, /0x[0-9a-f]/i, `${what}: no pointer address`);
}

describe('ffmpeg reads audio containers only', () => {
  let work: string;
  let secret: string;
  const server = suiteServer(
    (scratch) => {
      work = scratch;
      // A readable folder that is not a file root, holding real speech.
      secret = join(work, 'private');
      const roots = join(work, 'roots');
      mkdirSync(secret);
      mkdirSync(roots);
      const speech = ['-f', 'lavfi', '-i', 'flite=text=the quarterly numbers are confidential'];
      ffmpeg([...speech, '-c:a', 'libmp3lame', join(secret, 'meeting.mp3')]);
      ffmpeg([...speech, '-c:a', 'aac', join(secret, 'meeting.m4a')]);
      return {
        api_keys: [{ key: KEY, scope: 'inference' }],
        file_roots: [roots],
        ffmpeg_timeout_ms: FFMPEG_TIMEOUT_MS,
        models: [fixtureModel('asr')],
      };
    },
    { scratch: 'voxd-confine-', parallel: true },
  );

  const playlists = () => ({
    hls: `#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:5.0,\n${secret}/meeting.mp3\n#EXT-X-ENDLIST\n`,
    dash: `<?xml version="1.0"?>\n<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT2S" minBufferTime="PT1S" profiles="urn:mpeg:dash:profile:isoff-on-demand:2011"><Period><AdaptationSet mimeType="audio/mp4"><Representation id="a" bandwidth="64000" codecs="mp4a.40.2"><BaseURL>${secret}/meeting.m4a</BaseURL></Representation></AdaptationSet></Period></MPD>\n`,
    concat: `ffconcat version 1.0\nfile ${secret}/meeting.mp3\n`,
  });

  test('the private file itself is refused by path (the setting the playlists went around)', async () => {
    const res = await request(server.url, 'POST', '/v1/tasks/run', {
      body: JSON.stringify({ model: 'asr', audio: join(secret, 'meeting.mp3') }),
      headers: { ...AUTH, 'Content-Type': 'application/json' },
    });
    errorOf(res, 403, 'forbidden');
  });

  test('HLS, DASH and ffconcat naming a private file: a 400, never its transcript (multipart and base64)', async () => {
    for (const [format, text] of Object.entries(playlists())) {
      const bytes = Buffer.from(text);
      assertRefused(await upload(server.url, bytes, 'audio.mp3'), 'file', format, `${format} multipart`);
      assertRefused(await base64Task(server.url, bytes), 'audio_base64', format, `${format} base64`);
    }
    assert.equal(ffmpegChildren(), 0);
  });

  test('an ffconcat whose entry is stdin is refused at once, with no pointer address', async () => {
    const bytes = Buffer.from('ffconcat version 1.0\nfile stdin\nfile stdin\n');
    const res = await withDeadline(
      upload(server.url, bytes, 'a.ffconcat'),
      'the self-naming ffconcat',
      30_000,
    );
    assertRefused(res, 'file', 'concat', 'ffconcat stdin');
  });

  test('other indirection formats (sdp, an image) are refused too, naming what ffmpeg found', async () => {
    const sdp = 'v=0\no=- 0 0 IN IP4 127.0.0.1\ns=x\nc=IN IP4 127.0.0.1\nt=0 0\nm=audio 5004 RTP/AVP 0\n';
    assertRefused(await upload(server.url, Buffer.from(sdp), 'a.sdp'), 'file', 'sdp', 'sdp');
    const png = join(work, 'p.png');
    ffmpeg(['-f', 'lavfi', '-i', 'testsrc=size=8x8:d=0.1', '-frames:v', '1', png]);
    assertRefused(await base64Task(server.url, readFileSync(png)), 'audio_base64', 'png_pipe', 'png');
  });

  test('a compressed file declaring 1 Hz is decoded (resampled to 8 kHz by ffmpeg), never called a WAV', async () => {
    const path = join(work, 'one-hertz.flac');
    // 40 samples at 1 Hz: 40 s of audio (ffmpeg's resampler makes nothing of a handful).
    ffmpeg(['-f', 'lavfi', '-i', 'aevalsrc=0.5*sin(t):s=1:d=40', '-c:a', 'flac', path]);
    const res = await upload(server.url, readFileSync(path), 'one-hertz.flac');
    assert.doesNotMatch(res.body.toString(), /WAV/);
    // 40 s at the fixture's 16 kHz.
    assert.equal(reportOf(res).audio.samples, 640_000);
  });

  test('live HLS playlists (no ENDLIST) on every ffmpeg slot do not hold them: a compressed upload after them is answered', async () => {
    // As many playlists as the server has ffmpeg slots (the number of cores, at least 2).
    const live = Buffer.from(`#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1.0,\n${secret}/meeting.mp3\n`);
    const held = Array.from({ length: Math.max(2, availableParallelism()) }, () =>
      upload(server.url, live, 'live.m3u8'),
    );
    const answered = Promise.all(held);
    // Either every playlist is answered, or every slot is held by one: then comes the real upload.
    await Promise.race([
      answered,
      waitUntil('the playlists hold the slots', () => ffmpegChildren() >= held.length),
    ]);
    const mp3 = readFileSync(join(secret, 'meeting.mp3'));
    const res = await withDeadline(
      upload(server.url, mp3, 'real.mp3'),
      'the upload after the playlists',
      30_000,
    );
    assert.ok(reportOf(res).audio.samples > 8000, 'the real upload is transcribed');
    for (const res of await withDeadline(answered, 'the playlists', 30_000))
      assertRefused(res, 'file', 'hls', 'live hls');
  });
});

describe('a decode that makes no audio', () => {
  // Answers the startup probe, then makes nothing of any input, for as long as it is let.
  const standIn = suiteStandInFfmpeg('voxd-stall-', 'silent-ffmpeg', 'exec sleep 600');

  test('is stopped at ffmpeg_decode_stall_ms, long before ffmpeg_timeout_ms: a 400 naming it, the child gone', async () => {
    await withServer(
      { ffmpeg_timeout_ms: FFMPEG_TIMEOUT_MS, ffmpeg_decode_stall_ms: 200, models: [fixtureModel('asr')] },
      { overrides: { ffmpeg_path: join(standIn.dir, 'silent-ffmpeg') } },
      async (server) => {
        const form = new FormData();
        form.set('model', 'asr');
        form.set('file', new Blob([Buffer.from('ID3 not really')]), 'x.mp3');
        const res = await withDeadline(
          request(server.url, 'POST', '/v1/audio/transcriptions', { body: form }),
          'the stalled decode',
          30_000,
        );
        const message = errorOf(res, 400, 'invalid_request_error');
        assert.equal(message, 'file: ffmpeg decoded no audio from it for ffmpeg_decode_stall_ms=200');
        await waitUntil('the child is gone', () => ffmpegChildren() === 0);
      },
    );
  });
});
