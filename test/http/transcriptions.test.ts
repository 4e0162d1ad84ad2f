/** POST /v1/audio/transcriptions over real HTTP: multipart uploads and server-local JSON paths. */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { suiteServer } from '../helpers/suite-server.js';
import {
  badRequest,
  errorOf,
  fixtureModel,
  type HttpResult,
  post,
  reportOf,
  request,
} from '../helpers/voxd.js';
import { buildWav, sine, sineWav, smallWav } from './wav-helpers.js';

const PATH = '/v1/audio/transcriptions';
const SINE_RMS = (amplitude: number) => amplitude / Math.SQRT2;

interface Upload {
  data: Buffer;
  name: string;
}

function upload(
  base: string,
  fields: Record<string, string>,
  file?: Upload,
  query = '',
): Promise<HttpResult> {
  const form = new FormData();
  for (const [key, value] of Object.entries(fields)) form.append(key, value);
  if (file) form.append('file', new Blob([file.data], { type: 'audio/wav' }), file.name);
  return request(base, 'POST', `${PATH}${query}`, { body: form });
}

describe('POST /v1/audio/transcriptions', () => {
  const server = suiteServer({
    models: [
      fixtureModel('asr'),
      fixtureModel('diar', { task: 'diar', lazy: true }),
      fixtureModel('asr-def', { lazy: true, default_request_options: { beam: 5, lang_hint: 'de' } }),
      fixtureModel('tts', { task: 'tts', lazy: true }),
    ],
  });
  const wav = (name = 'a.wav', data = smallWav()): Upload => ({ data, name });

  test('a stereo 44.1 kHz 24-bit upload reaches the model as mono 16 kHz; timing is the input duration', async () => {
    const frames = 4411;
    const data = sineWav(44100, 2, 24, frames);
    const res = await upload(server.url, { model: 'asr' }, wav('a.wav', data));
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    // OpenAI's text and usage (whole seconds, rounded up), the exact duration, then voxd's timing.
    assert.deepEqual(Object.keys(res.json), ['text', 'duration', 'usage', 'timing']);
    assert.equal(res.json.duration, 0.1);
    assert.deepEqual(res.json.usage, { type: 'duration', seconds: 1 });
    const report = reportOf(res);
    assert.equal(report.task, 'asr');
    assert.deepEqual(
      { ...report.audio, rms: undefined },
      { samples: Math.round((frames * 16000) / 44100), sample_rate: 16000, channels: 1, rms: undefined },
    );
    assert.ok(Math.abs(report.audio.rms - SINE_RMS(0.5)) < 0.01, `rms ${report.audio.rms}`);
    assert.deepEqual(Object.keys(res.json.timing), ['wall_ms', 'audio_duration_ms', 'rtf']);
    const inputMs = (frames / 44100) * 1000;
    assert.ok(
      Math.abs(res.json.timing.audio_duration_ms - inputMs) <= 0.001,
      `${res.json.timing.audio_duration_ms}`,
    );
    assert.ok(Math.abs(res.json.timing.rtf - res.json.timing.wall_ms / inputMs) <= 0.002);
  });

  test('stereo is averaged to mono: opposite channels cancel', async () => {
    const tone = sine(440, 0.5, 44100);
    const data = buildWav({
      sampleRate: 44100,
      channels: 2,
      bits: 16,
      frames: 4410,
      sample: (f, c) => (c === 0 ? tone(f) : -tone(f)),
    });
    const report = reportOf(await upload(server.url, { model: 'asr' }, wav('a.wav', data)));
    assert.equal(report.audio.channels, 1);
    assert.ok(report.audio.rms < 0.001, `rms ${report.audio.rms}`);
  });

  test('8-bit unsigned PCM at 8 kHz is decoded and upsampled', async () => {
    const data = sineWav(8000, 1, 8, 800, 300);
    const res = await upload(server.url, { model: 'asr' }, wav('a.wav', data));
    const report = reportOf(res);
    assert.deepEqual(
      [report.audio.samples, report.audio.sample_rate, report.audio.channels],
      [1600, 16000, 1],
    );
    assert.ok(Math.abs(report.audio.rms - SINE_RMS(0.5)) < 0.01, `rms ${report.audio.rms}`);
    assert.ok(Math.abs(res.json.timing.audio_duration_ms - 100) <= 0.001);
  });

  test('a telephony WAV (G.711 mu-law, 8 kHz) is decoded by ffmpeg, not refused', async () => {
    // 100 ms of a 300 Hz sine at half scale, each sample mu-law encoded (G.711).
    const muLaw = (x: number) => {
      let s = Math.round(x * 32767);
      const sign = s < 0 ? 0x80 : 0;
      s = Math.min(Math.abs(s), 32635) + 0x84;
      let exponent = 7;
      for (let mask = 0x4000; (s & mask) === 0 && exponent > 0; mask >>= 1) exponent--;
      return ~(sign | (exponent << 4) | ((s >> (exponent + 3)) & 0x0f)) & 0xff;
    };
    const samples = Buffer.from(
      Array.from({ length: 800 }, (_, i) => muLaw(0.5 * Math.sin((2 * Math.PI * 300 * i) / 8000))),
    );
    const fmt = Buffer.alloc(16);
    fmt.writeUInt16LE(7, 0); // WAVE_FORMAT_MULAW
    fmt.writeUInt16LE(1, 2);
    fmt.writeUInt32LE(8000, 4);
    fmt.writeUInt32LE(8000, 8);
    fmt.writeUInt16LE(1, 12);
    fmt.writeUInt16LE(8, 14);
    const data = Buffer.concat([
      Buffer.from('RIFF'),
      Buffer.from(Uint32Array.of(4 + 8 + 16 + 8 + samples.length).buffer),
      Buffer.from('WAVEfmt '),
      Buffer.from(Uint32Array.of(16).buffer),
      fmt,
      Buffer.from('data'),
      Buffer.from(Uint32Array.of(samples.length).buffer),
      samples,
    ]);
    const report = reportOf(await upload(server.url, { model: 'asr' }, wav('call.wav', data)));
    assert.equal(report.audio.sample_rate, 16000);
    assert.ok(Math.abs(report.audio.samples - 1600) <= 32, `${report.audio.samples} samples`);
    assert.ok(Math.abs(report.audio.rms - SINE_RMS(0.5)) < 0.02, `rms ${report.audio.rms}`);
  });

  test('32-bit float at 16 kHz mono passes through unchanged', async () => {
    const data = buildWav({
      sampleRate: 16000,
      channels: 1,
      bits: 32,
      float: true,
      frames: 1000,
      sample: sine(500, 0.25, 16000),
    });
    const report = reportOf(await upload(server.url, { model: 'asr' }, wav('a.wav', data)));
    assert.deepEqual(
      [report.audio.samples, report.audio.sample_rate, report.audio.channels],
      [1000, 16000, 1],
    );
    assert.ok(Math.abs(report.audio.rms - SINE_RMS(0.25)) < 0.0005, `rms ${report.audio.rms}`);
  });

  test('language and prompt reach the model (prompt as the text, language also as an option)', async () => {
    const report = reportOf(
      await upload(server.url, { model: 'asr', language: 'fr', prompt: 'some context' }, wav()),
    );
    assert.equal(report.language, 'fr');
    assert.equal(report.text, 'some context');
    assert.equal(report.options.language, 'fr');
  });

  test('text wins over prompt; fields may come before or after the file', async () => {
    const form = new FormData();
    form.append('file', new Blob([smallWav()]), 'a.wav');
    form.append('prompt', 'the prompt');
    form.append('text', 'the text');
    form.append('model', 'asr');
    const report = reportOf(await request(server.url, 'POST', PATH, { body: form }));
    assert.equal(report.text, 'the text');
    assert.equal(report.language, undefined);
    assert.ok(!('language' in report.options), 'no language option without a language');
  });

  test('an options field (JSON text) is merged over the model defaults', async () => {
    const report = reportOf(
      await upload(server.url, { model: 'asr-def', options: '{"beam":2,"extra":true}' }, wav()),
    );
    assert.deepEqual(report.options, { beam: '2', lang_hint: 'de', extra: 'true' });
    badRequest(await upload(server.url, { model: 'asr', options: '{not json' }, wav()), 'options');
    badRequest(await upload(server.url, { model: 'asr', options: '[1,2]' }, wav()), 'options');
  });

  test('a filename with no extension or an upper-case .WAV is accepted', async () => {
    for (const name of ['recording', 'A.WAV', 'take.2.wav']) {
      const res = await upload(server.url, { model: 'asr' }, wav(name));
      assert.equal(res.status, 200, name);
      assert.equal(reportOf(res).audio.samples, 1600);
    }
  });

  test('the file name does not decide the format: a WAV named a.mp3 is read as WAV', async () => {
    assert.equal(reportOf(await upload(server.url, { model: 'asr' }, wav('a.mp3'))).audio.samples, 1600);
  });

  test('bytes that are no audio are a 400 saying they could not be decoded, never quoting them', async () => {
    const id3 = Buffer.concat([Buffer.from('ID3\x03', 'latin1'), Buffer.alloc(64)]);
    badRequest(await upload(server.url, { model: 'asr' }, wav('a.wav', id3)), 'file', 'could not be decoded');
    const text = errorOf(
      await upload(server.url, { model: 'asr' }, wav('a.wav', Buffer.from('hello world'))),
      400,
      'invalid_request_error',
    );
    assert.ok(
      text.includes('could not be decoded') && !text.includes('hell'),
      `the file's bytes are not echoed: ${text}`,
    );
    // A WAV that says MP3 is given to ffmpeg, which finds no MP3 in it.
    const mp3InWav = smallWav();
    mp3InWav.writeUInt16LE(0x0055, 20);
    badRequest(
      await upload(server.url, { model: 'asr' }, wav('a.wav', mp3InWav)),
      'file',
      'could not be decoded',
    );
  });

  test('an empty file is a 400', async () => {
    badRequest(await upload(server.url, { model: 'asr' }, wav('a.wav', Buffer.alloc(0))), 'file', 'empty');
  });

  test('a missing file is a 400 naming the field', async () => {
    badRequest(await upload(server.url, { model: 'asr' }), "'file'");
    // A plain text field called "file" is not an upload.
    badRequest(await upload(server.url, { model: 'asr', file: '/etc/hostname' }), "'file'");
    const other = new FormData();
    other.append('model', 'asr');
    other.append('audio', new Blob([smallWav()]), 'a.wav');
    badRequest(await request(server.url, 'POST', PATH, { body: other }), "'file'");
  });

  test('a missing model is a 400, an unknown one 404 not_found', async () => {
    badRequest(await upload(server.url, {}, wav()), 'model');
    badRequest(await upload(server.url, { model: '' }, wav()), 'model');
    const message = errorOf(await upload(server.url, { model: 'ghost' }, wav()), 404, 'not_found');
    assert.ok(message.includes('ghost'), message);
  });

  test('a speech model is a 400 naming its task; a diarization model is served', async () => {
    badRequest(await upload(server.url, { model: 'tts' }, wav()), "'tts'", PATH);
    assert.equal(reportOf(await upload(server.url, { model: 'diar' }, wav())).task, 'diar');
  });

  test('JSON body with a server-local path in audio, audio_path or file', async () => {
    const path = join(server.dir, 'local.wav');
    writeFileSync(path, smallWav(800));
    for (const key of ['audio', 'audio_path', 'file']) {
      const res = await post(server.url, PATH, { model: 'asr', [key]: path, language: 'en', text: 'ctx' });
      const report = reportOf(res);
      assert.equal(report.audio.samples, 800, key);
      assert.equal(report.language, 'en');
      assert.equal(report.text, 'ctx');
      assert.ok(Math.abs(res.json.timing.audio_duration_ms - 50) <= 0.001);
    }
  });

  test('a relative path resolves against the config folder', async () => {
    mkdirSync(join(server.dir, 'clips'), { recursive: true });
    writeFileSync(join(server.dir, 'clips', 'rel.wav'), smallWav(400));
    const res = await post(server.url, PATH, { model: 'asr', audio: 'clips/rel.wav' });
    assert.equal(reportOf(res).audio.samples, 400);
  });

  test('JSON path errors are 400s naming the field and the path', async () => {
    const missing = errorOf(
      await post(server.url, PATH, { model: 'asr', audio: 'no/such.wav' }),
      403,
      'forbidden',
    );
    assert.ok(missing.startsWith('audio: a server-local file must be') && !missing.includes('such'), missing);
    badRequest(await post(server.url, PATH, { model: 'asr' }), 'audio', 'audio_path', 'file');
    badRequest(await post(server.url, PATH, { model: 'asr', audio_path: 5 }), 'audio_path', '5');
    writeFileSync(join(server.dir, 'text.wav'), 'not audio');
    badRequest(
      await post(server.url, PATH, { model: 'asr', file: 'text.wav' }),
      'file',
      'could not be decoded',
    );
    writeFileSync(join(server.dir, 'ok.wav'), smallWav());
    badRequest(await post(server.url, PATH, { audio: 'ok.wav' }), 'model');
    errorOf(await post(server.url, PATH, { model: 'ghost', audio: 'ok.wav' }), 404, 'not_found');
  });

  test('response_format text answers text/plain with the bare text', async () => {
    const res = await upload(server.url, { model: 'asr', response_format: 'text', prompt: 'plain' }, wav());
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
    assert.equal(JSON.parse(res.body.toString('utf8')).text, 'plain');
    const path = join(server.dir, 'fmt.wav');
    writeFileSync(path, smallWav());
    const json = await post(server.url, PATH, { model: 'asr', audio: path, response_format: 'text' });
    assert.match(json.headers.get('content-type') ?? '', /^text\/plain/);
    badRequest(
      await upload(server.url, { model: 'asr', response_format: 'xml' }, wav()),
      'response_format',
      '"xml"',
      'verbose_json, srt, vtt',
    );
  });

  test('busy_timeout_ms as a form field or query parameter: 0 accepted, invalid values 400', async () => {
    assert.equal((await upload(server.url, { model: 'asr', busy_timeout_ms: '0' }, wav())).status, 200);
    assert.equal((await upload(server.url, { model: 'asr', busy_timeout_ms: '250' }, wav())).status, 200);
    assert.equal((await upload(server.url, { model: 'asr' }, wav(), '?busy_timeout_ms=0')).status, 200);
    for (const value of ['-1', '1.5', 'x', '']) {
      badRequest(
        await upload(server.url, { model: 'asr', busy_timeout_ms: value }, wav()),
        'busy_timeout_ms',
      );
      badRequest(
        await upload(server.url, { model: 'asr' }, wav(), `?busy_timeout_ms=${encodeURIComponent(value)}`),
        'busy_timeout_ms',
      );
    }
    const path = join(server.dir, 'busy.wav');
    writeFileSync(path, smallWav());
    assert.equal(
      (await post(server.url, PATH, { model: 'asr', audio: path, busy_timeout_ms: 0 })).status,
      200,
    );
    badRequest(
      await post(server.url, PATH, { model: 'asr', audio: path, busy_timeout_ms: -5 }),
      'busy_timeout_ms',
      '-5',
    );
  });

  test('stream: true on an offline model is a 400 naming the mode; false and 0 are accepted; other values 400', async () => {
    badRequest(
      await upload(server.url, { model: 'asr', stream: 'true' }, wav()),
      'stream',
      '"mode": "streaming"',
    );
    badRequest(await upload(server.url, { model: 'asr', stream: 'yes' }, wav()), 'stream', '"yes"');
    for (const value of ['false', 'False', '0']) {
      assert.equal((await upload(server.url, { model: 'asr', stream: value }, wav())).status, 200, value);
    }
  });

  test('a malformed multipart body is a 400, and the server keeps serving', async () => {
    const noBoundary = await request(server.url, 'POST', PATH, {
      body: 'x',
      headers: { 'content-type': 'multipart/form-data' },
    });
    badRequest(noBoundary, 'multipart');
    const truncated = await request(server.url, 'POST', PATH, {
      body: '--XYZ\r\nContent-Disposition: form-data; name="model"\r\n\r\nasr\r\n--XYZ\r\nContent-Disp',
      headers: { 'content-type': 'multipart/form-data; boundary=XYZ' },
    });
    badRequest(truncated, 'multipart');
    assert.equal((await upload(server.url, { model: 'asr' }, wav())).status, 200);
  });
});

describe('max_request_body_bytes on uploads', () => {
  const server = suiteServer({ max_request_body_bytes: 2000, models: [fixtureModel('asr')] });

  test('an upload within the limit is served; one over it is 413', async () => {
    assert.equal(
      (await upload(server.url, { model: 'asr' }, { data: smallWav(200), name: 'a.wav' })).status,
      200,
    );
    const res = await upload(server.url, { model: 'asr' }, { data: smallWav(2000), name: 'a.wav' });
    const message = errorOf(res, 413, 'invalid_request_error');
    assert.ok(message.includes('max_request_body_bytes'), message);
    assert.equal(
      (await upload(server.url, { model: 'asr' }, { data: smallWav(200), name: 'a.wav' })).status,
      200,
    );
  });
});
