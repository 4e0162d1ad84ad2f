/**
 * Audio formats through Debian's ffmpeg (issue 11): speech answered as mp3, opus, aac and flac,
 * whole and streamed as it is made, checked by decoding it again with ffprobe; uploads in every
 * common container, with formats that keep their index at the end; bad inputs, a missing and a
 * hanging ffmpeg, and clients that leave, each answered and cleaned up.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { RawClient } from '../helpers/raw-http.js';
import { childrenNamed, suiteStandInFfmpeg } from '../helpers/stand-in-ffmpeg.js';
import {
  errorOf,
  fixtureModel,
  get,
  post,
  reportOf,
  request,
  startServer,
  type TestServer,
  tempDir,
  waitUntil,
  withDeadline,
  withServer,
} from '../helpers/voxd.js';
import { buildWav, sine } from './wav-helpers.js';

interface Probe {
  codec: string;
  sampleRate: number;
  channels: number;
  duration: number;
}

/**
 * What ffprobe reads in `bytes` (the first audio stream's codec, rate, channels), and its duration
 * as ffmpeg decodes it (a piped FLAC or ADTS file declares none).
 */
function probe(bytes: Buffer, dir: string): Probe {
  const file = join(dir, `probe-${Math.random().toString(36).slice(2)}`);
  writeFileSync(file, bytes);
  try {
    const show = ['-show_entries', 'stream=codec_name,sample_rate,channels', '-of', 'json'];
    const out = execFileSync('ffprobe', ['-v', 'error', '-select_streams', 'a:0', ...show, file]);
    const stream = (JSON.parse(out.toString()) as { streams: Record<string, string | number>[] }).streams[0]!;
    const sampleRate = Number(stream['sample_rate']);
    const pcm = execFileSync('ffmpeg', ['-v', 'error', '-i', file, '-f', 's16le', '-ac', '1', '-'], {
      maxBuffer: 1 << 28,
    });
    return {
      codec: String(stream['codec_name']),
      sampleRate,
      channels: Number(stream['channels']),
      duration: pcm.length / 2 / sampleRate,
    };
  } finally {
    rmSync(file, { force: true });
  }
}

/** `wav` converted by ffmpeg into another container/codec (the test's own use of the tool). */
function convert(wav: Buffer, dir: string, name: string, args: string[]): Buffer {
  const input = join(dir, 'convert-in.wav');
  const output = join(dir, name);
  writeFileSync(input, wav);
  execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', '-i', input, ...args, output]);
  const bytes = readFileSync(output);
  rmSync(output);
  return bytes;
}

function upload(base: string, model: string, bytes: Buffer, filename: string) {
  const form = new FormData();
  form.set('model', model);
  form.set('file', new Blob([bytes]), filename);
  return request(base, 'POST', '/v1/audio/transcriptions', { body: form });
}

/** ffmpeg children of this process (the server runs in it). */
const ffmpegChildren = () => childrenNamed(['ffmpeg', 'sleep', 'sh']);
/**
 * Those of them at work: all but the spare encoders `server` keeps started ahead of need
 * (src/audio/ffmpeg-spares.ts), which idle on an empty input until a request takes one.
 */
const workingChildren = (server: TestServer) => ffmpegChildren() - server.voxd.codec.spareCount;

const TWO_SECONDS = buildWav({
  sampleRate: 44_100,
  channels: 2,
  bits: 16,
  frames: 88_200,
  sample: sine(440, 0.5, 44_100),
});

describe('audio formats through ffmpeg', () => {
  let server: TestServer;
  let work: string;
  let spoolRoot: string;
  const previousTmp = process.env['TMPDIR'];
  const leftovers = () => readdirSync(spoolRoot).filter((name) => /^voxd-(upload|decode)-/.test(name));

  before(async () => {
    work = tempDir('voxd-formats-');
    spoolRoot = join(work, 'tmp');
    mkdirSync(spoolRoot);
    process.env['TMPDIR'] = spoolRoot;
    server = await startServer(
      {
        models: [
          fixtureModel('asr'),
          fixtureModel('tts', { task: 'tts', load_options: { sample_rate: 24000 } }),
          fixtureModel('tts-stream', {
            task: 'tts',
            mode: 'streaming',
            load_options: { sample_rate: 24000 },
            default_request_options: { chunks: '4' },
          }),
        ],
      },
      { parallel: true },
    );
  });
  after(async () => {
    await server?.close();
    if (previousTmp === undefined) delete process.env['TMPDIR'];
    else process.env['TMPDIR'] = previousTmp;
    rmSync(work, { recursive: true, force: true });
  });

  /** A raw mp3 stream of tts-stream held open after its first chunk by `gate`, once its first bytes came. */
  async function heldMp3Stream(gate: string): Promise<RawClient> {
    const client = new RawClient(server.url);
    const body = JSON.stringify({
      model: 'tts-stream',
      input: 'Hello there, this is a longer sentence to speak.',
      stream_format: 'audio',
      response_format: 'mp3',
      options: { chunk_gate: gate },
    });
    await client.write(
      `POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    await client.until('mp3 bytes while the run is held', () => (client.response?.body.length ?? 0) > 0);
    return client;
  }

  const speak = (body: Record<string, unknown>) =>
    post(server.url, '/v1/audio/speech', { model: 'tts', input: 'Hello there. How are you?', ...body });
  /** "Hello there." from the streaming model. */
  const speakStreaming = (body: Record<string, unknown>) =>
    post(server.url, '/v1/audio/speech', { model: 'tts-stream', input: 'Hello there.', ...body });

  test('speech in every format: the right Content-Type, codec, rate and duration (within a frame of the WAV)', async () => {
    const wav = await speak({ response_format: 'wav' });
    assert.equal(wav.status, 200);
    const reference = probe(wav.body, work);
    const expected = {
      mp3: { type: 'audio/mpeg', codec: 'mp3' },
      opus: { type: 'audio/ogg', codec: 'opus' },
      aac: { type: 'audio/aac', codec: 'aac' },
      flac: { type: 'audio/flac', codec: 'flac' },
    };
    for (const [format, want] of Object.entries(expected)) {
      const res = await speak({ response_format: format });
      assert.equal(res.status, 200, `${format}: ${res.body.toString().slice(0, 200)}`);
      assert.equal(res.headers.get('content-type'), want.type, format);
      const got = probe(res.body, work);
      assert.equal(got.codec, want.codec, format);
      // Opus is always decoded at 48 kHz; the others keep the model's rate.
      assert.equal(got.sampleRate, format === 'opus' ? 48000 : 24000, format);
      assert.ok(
        Math.abs(got.duration - reference.duration) < 0.08,
        `${format}: ${got.duration} s vs ${reference.duration} s`,
      );
    }
  });

  test('a whole FLAC declares its exact sample count and the MD5 of what it decodes to; a streamed one declares none', async () => {
    const wav = await speak({ response_format: 'wav' });
    const frames = (wav.body.length - 44) / 2;
    const flac = await speak({ response_format: 'flac', stream: false });
    assert.equal(flac.status, 200);
    const file = join(work, 'declared.flac');
    writeFileSync(file, flac.body);
    const show = ['-show_entries', 'stream=duration_ts,duration,sample_rate', '-of', 'json'];
    const out = execFileSync('ffprobe', ['-v', 'error', '-select_streams', 'a:0', ...show, file]);
    const stream = (JSON.parse(out.toString()) as { streams: Record<string, string | number>[] }).streams[0]!;
    // A FLAC stream's time base is its sample rate: duration_ts is STREAMINFO's total samples.
    assert.equal(Number(stream['duration_ts']), frames, JSON.stringify(stream));
    assert.equal(Number(stream['duration']), Number((frames / 24000).toFixed(6)));
    // The MD5 is FLAC's: of the decoded samples, 24 bits each, little-endian.
    const decoded = execFileSync('ffmpeg', ['-v', 'error', '-i', file, '-f', 's32le', '-'], {
      maxBuffer: 1 << 26,
    });
    const packed = Buffer.alloc((decoded.length / 4) * 3);
    for (let i = 0; i < decoded.length / 4; i++) packed.writeIntLE(decoded.readInt32LE(i * 4) >> 8, i * 3, 3);
    assert.equal(flac.body.subarray(26, 42).toString('hex'), createHash('md5').update(packed).digest('hex'));
    rmSync(file);

    // A stream's header is sent before its length is known.
    const streamed = await speakStreaming({ stream_format: 'audio', response_format: 'flac' });
    assert.equal(streamed.status, 200);
    assert.equal(streamed.body.toString('latin1', 0, 4), 'fLaC');
    assert.equal(streamed.body.readUInt32BE(22) + (streamed.body[21]! & 0x0f), 0, 'total samples 0: unknown');
    // So is a plain request's, which is streamed as it is made.
    const plain = await speak({ response_format: 'flac' });
    assert.equal(plain.status, 200);
    assert.equal(plain.body.toString('latin1', 0, 4), 'fLaC');
    assert.equal(plain.body.readUInt32BE(22) + (plain.body[21]! & 0x0f), 0, 'total samples 0: unknown');
    assert.equal(probe(plain.body, work).sampleRate, 24000);
  });

  test('sample_rate resamples the answer; pcm without it is the model rate', async () => {
    const native = await speak({ response_format: 'pcm' });
    const at16k = await speak({ response_format: 'pcm', sample_rate: 16000 });
    assert.equal(at16k.status, 200);
    const ratio = at16k.body.length / native.body.length;
    assert.ok(Math.abs(ratio - 16000 / 24000) < 0.001, `length ratio ${ratio}`);
    assert.equal(
      probe((await speak({ response_format: 'mp3', sample_rate: 16000 })).body, work).sampleRate,
      16000,
    );
    const bad = await speak({ sample_rate: 5 });
    assert.ok(errorOf(bad, 400, 'invalid_request_error').startsWith('sample_rate: 5 is invalid'));
  });

  test('streamed mp3 (raw and SSE) is valid mp3 of the whole speech; the first bytes come before the synthesis ends', async () => {
    const raw = await speakStreaming({ stream_format: 'audio', response_format: 'mp3' });
    assert.equal(raw.status, 200);
    assert.equal(raw.headers.get('content-type'), 'audio/mpeg');
    const whole = await speakStreaming({ response_format: 'wav' });
    const streamed = probe(raw.body, work);
    assert.equal(streamed.codec, 'mp3');
    assert.ok(Math.abs(streamed.duration - probe(whole.body, work).duration) < 0.08);

    const sse = await speakStreaming({ stream: true, response_format: 'mp3' });
    const deltas = sse.body
      .toString()
      .split('\n\n')
      .filter((e) => e.includes('speech.audio.delta'))
      .map((e) => Buffer.from(JSON.parse(e.slice(6)).audio, 'base64'));
    // How many deltas depends on how ffmpeg's writes meet node's reads; that bytes come before the
    // end is shown with a gate below.
    assert.ok(deltas.length >= 1, 'deltas');
    assert.equal(probe(Buffer.concat(deltas), work).codec, 'mp3');

    // The run waits between its chunks for a gate: bytes must arrive while it is still running.
    const ended = server.fixture.record.of('tts-stream', 'run-end').length;
    const gate = server.gate('mp3-stream');
    const client = await heldMp3Stream(gate.path);
    assert.equal(
      server.fixture.record.of('tts-stream', 'run-end').length,
      ended,
      'the gated run is still going',
    );
    await gate.open();
    client.socket.destroy();
    await waitUntil('the encoder is gone', () => workingChildren(server) === 0);
  });

  test('uploads in every common format, any rate and channels; M4A with its index at the end', async () => {
    const formats: [string, string[]][] = [
      ['a.flac', ['-c:a', 'flac']],
      ['a.mp3', ['-c:a', 'libmp3lame']],
      ['a.ogg', ['-c:a', 'libvorbis']],
      ['a.opus', ['-c:a', 'libopus']],
      ['a.webm', ['-c:a', 'libopus']],
      ['a.m4a', ['-c:a', 'aac']], // ffmpeg writes the moov atom at the end unless told otherwise
      ['a.mp4', ['-c:a', 'aac']],
      ['a.aac', ['-c:a', 'aac', '-f', 'adts']],
    ];
    for (const [name, args] of formats) {
      const bytes = convert(TWO_SECONDS, work, name, args);
      if (name === 'a.m4a') assert.ok(bytes.indexOf('moov') > bytes.indexOf('mdat'), 'moov after mdat');
      const report = reportOf(await upload(server.url, 'asr', bytes, name));
      // 2 s at the fixture's 16 kHz, give or take the codec's padding.
      assert.ok(Math.abs(report.audio.samples - 32_000) < 1600, `${name}: ${report.audio.samples} samples`);
      assert.ok(report.audio.rms > 0.2, `${name}: rms ${report.audio.rms}`);
    }
    // base64 and a server path take the same formats.
    const mp3 = convert(TWO_SECONDS, work, 'b.mp3', ['-c:a', 'libmp3lame']);
    const viaBase64 = reportOf(
      await post(server.url, '/v1/tasks/run', { model: 'asr', audio_base64: mp3.toString('base64') }),
    );
    writeFileSync(join(server.dir, 'b.mp3'), mp3);
    const viaPath = reportOf(await post(server.url, '/v1/tasks/run', { model: 'asr', audio: 'b.mp3' }));
    assert.deepEqual(viaBase64.audio, viaPath.audio);
    assert.deepEqual(leftovers(), [], 'no temporary file is left');
  });

  test('bad inputs: random bytes, a cut header, a video without audio: 400 that the audio could not be decoded', async () => {
    const random = Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 7919) % 251));
    const cases: [string, Buffer][] = [
      ['random.m4a', random],
      ['cut.mp3', convert(TWO_SECONDS, work, 'c.mp3', ['-c:a', 'libmp3lame']).subarray(0, 40)],
      [
        'video.webm',
        (() => {
          const out = join(work, 'video.webm');
          execFileSync('ffmpeg', [
            '-hide_banner',
            '-loglevel',
            'error',
            '-y',
            '-f',
            'lavfi',
            '-i',
            'testsrc=size=64x64:rate=5:duration=1',
            '-c:v',
            'libvpx',
            out,
          ]);
          return readFileSync(out);
        })(),
      ],
    ];
    for (const [name, bytes] of cases) {
      const message = errorOf(await upload(server.url, 'asr', bytes, name), 400, 'invalid_request_error');
      assert.ok(message.startsWith('file: the audio could not be decoded'), `${name}: ${message}`);
    }
    // A file cut short in the middle decodes as far as it goes, as any player would.
    const half = convert(TWO_SECONDS, work, 'h.mp3', ['-c:a', 'libmp3lame']);
    const cut = reportOf(await upload(server.url, 'asr', half.subarray(0, half.length / 2), 'half.mp3'));
    assert.ok(cut.audio.samples > 8000 && cut.audio.samples < 24_000, `${cut.audio.samples} samples`);
    assert.equal(workingChildren(server), 0);
    assert.deepEqual(leftovers(), []);
    assert.equal((await get(server.url, '/health')).status, 200);
  });

  test('a compressed file longer than max_audio_seconds is stopped while it decodes: 413', async () => {
    const long = convert(
      buildWav({ sampleRate: 8000, channels: 1, bits: 16, frames: 8000 * 30, sample: sine(300, 0.3, 8000) }),
      work,
      'long.mp3',
      ['-c:a', 'libmp3lame'],
    );
    await withServer({ max_audio_seconds: 10, models: [fixtureModel('asr')] }, async (short) => {
      errorOf(await upload(short.url, 'asr', long, 'long.mp3'), 413, 'invalid_request_error');
    });
  });

  test('ffmpeg_timeout_ms 0 is no limit: decoding and encoding still work', async () => {
    await withServer(
      {
        ffmpeg_timeout_ms: 0,
        models: [fixtureModel('asr'), fixtureModel('tts', { task: 'tts' })],
      },
      async (unbounded) => {
        const mp3 = convert(TWO_SECONDS, work, 'z.mp3', ['-c:a', 'libmp3lame']);
        assert.ok(reportOf(await upload(unbounded.url, 'asr', mp3, 'z.mp3')).audio.samples > 30_000);
        const speech = await post(unbounded.url, '/v1/audio/speech', {
          model: 'tts',
          input: 'hi',
          response_format: 'mp3',
        });
        assert.equal(speech.status, 200, speech.body.toString().slice(0, 200));
      },
    );
  });

  test('a client that leaves in the middle of an mp3 stream frees the slot and stops its encoder', async () => {
    const gate = server.gate('mp3-leave');
    const client = await heldMp3Stream(gate.path);
    assert.ok(workingChildren(server) >= 1, 'the encoder runs');
    client.socket.destroy();
    await waitUntil('the encoder is gone', () => workingChildren(server) === 0);
    await waitUntil('the slot is free', async () => {
      const { json } = await get(server.url, '/v1/models');
      return json.data.find((m: { id: string }) => m.id === 'tts-stream').active_slots === 0;
    });
  });
});

describe('without a working ffmpeg', () => {
  // A binary that answers the startup probe, then hangs on any real work.
  const standIn = suiteStandInFfmpeg('voxd-noffmpeg-', 'hanging-ffmpeg', 'exec sleep 60');

  test('missing: WAV and PCM work; any other format is a 400 naming ffmpeg', async () => {
    await withServer(
      { models: [fixtureModel('asr'), fixtureModel('tts', { task: 'tts' })] },
      { overrides: { ffmpeg_path: join(standIn.dir, 'no-such-ffmpeg') } },
      async (server) => {
        const mp3 = convert(TWO_SECONDS, standIn.dir, 'x.mp3', ['-c:a', 'libmp3lame']);
        const message = errorOf(await upload(server.url, 'asr', mp3, 'x.mp3'), 400, 'invalid_request_error');
        assert.ok(message.includes('needs ffmpeg'), message);
        const speech = await post(server.url, '/v1/audio/speech', {
          model: 'tts',
          input: 'hi',
          response_format: 'mp3',
        });
        assert.ok(errorOf(speech, 400, 'invalid_request_error').includes('ffmpeg'));
        assert.equal((await upload(server.url, 'asr', TWO_SECONDS, 'x.wav')).status, 200);
        assert.equal(
          (await post(server.url, '/v1/audio/speech', { model: 'tts', input: 'hi', response_format: 'pcm' }))
            .status,
          200,
        );
      },
    );
  });

  test('hanging: stopped at ffmpeg_timeout_ms with a 503, the child killed', async () => {
    await withServer(
      { ffmpeg_timeout_ms: 300, models: [fixtureModel('asr')] },
      { overrides: { ffmpeg_path: join(standIn.dir, 'hanging-ffmpeg') } },
      async (server) => {
        const res = await withDeadline(
          upload(server.url, 'asr', Buffer.from('ID3 not really'), 'x.mp3'),
          'the hanging decode',
          5000,
        );
        assert.ok(errorOf(res, 503, 'server_busy').includes('ffmpeg_timeout_ms=300'));
        await waitUntil('the child is gone', () => ffmpegChildren() === 0);
      },
    );
  });
});
