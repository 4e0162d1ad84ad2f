/**
 * A plain POST /v1/audio/speech (no `stream`, no `stream_format`) is streamed as it is made, as
 * OpenAI's is (issue 39, item 2): its first bytes arrive while the synthesis is held by a fixture
 * gate, in pcm, wav and mp3; the timing comes as HTTP trailers; `"stream": false` keeps the whole
 * answer with its Content-Length and timing headers; an error before the first byte is a plain
 * JSON error, one after it cuts the chunked body; the openai SDK's default call decodes.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import OpenAI from 'openai';
import { RawClient } from '../helpers/raw-http.js';
import { childrenNamed } from '../helpers/stand-in-ffmpeg.js';
import { suiteServer } from '../helpers/suite-server.js';
import { errorOf, fixtureModel, post, tempDir, waitUntil, withServer } from '../helpers/voxd.js';
import { readWavHeader } from './wav-helpers.js';

const RATE = 22050;
const SIX_DECIMALS = /^\d+\.\d{6}$/;
const TIMING = ['x-audiocpp-wall-ms', 'x-audiocpp-audio-duration-ms', 'x-audiocpp-rtf'];
/** Fixture tone length for a text: 120 ms plus 40 ms per character. */
const toneMs = (text: string) => 120 + 40 * [...text].length;

/** The trailer fields after a chunked body's last (zero) chunk, lower-cased; undefined without one. */
function trailersOf(raw: Buffer): Record<string, string> | undefined {
  const text = raw.toString('latin1');
  const last = text.lastIndexOf('\r\n0\r\n');
  if (last < 0) return undefined;
  const fields: Record<string, string> = {};
  for (const line of text.slice(last + 5).split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) fields[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return fields;
}

/** Seconds of audio ffmpeg decodes from `bytes` (in `dir`), and the codec ffprobe names. */
function decode(bytes: Buffer, dir: string): { codec: string; seconds: number } {
  const file = join(dir, `speech-${Math.random().toString(36).slice(2)}`);
  writeFileSync(file, bytes);
  try {
    const codec = execFileSync('ffprobe', [
      ...['-v', 'error', '-select_streams', 'a:0', '-show_entries', 'stream=codec_name'],
      ...['-of', 'default=nw=1:nk=1', file],
    ])
      .toString()
      .trim();
    const pcm = execFileSync(
      'ffmpeg',
      ['-v', 'error', '-i', file, '-ac', '1', '-ar', '8000', '-f', 's16le', '-'],
      {
        maxBuffer: 1 << 26,
      },
    );
    return { codec, seconds: pcm.length / 2 / 8000 };
  } finally {
    rmSync(file, { force: true });
  }
}

describe('a plain /v1/audio/speech request is streamed as it is made', () => {
  const server = suiteServer({
    models: [
      fixtureModel('tts', { task: 'tts', load_options: { sample_rate: RATE } }),
      // Its watchdog cancels a run held at a gate: a failure after the first byte, or before it.
      fixtureModel('tts-cut', { task: 'tts', load_options: { sample_rate: RATE }, max_inference_ms: 400 }),
    ],
  });
  const scratch = tempDir('voxd-first-byte-');
  after(() => rmSync(scratch, { recursive: true, force: true }));
  const INPUT = 'Hello there. How are you?';

  /** A plain request over one connection, its run held after its first chunk by `gate`. */
  async function held(model: string, body: Record<string, unknown>, gate: string): Promise<RawClient> {
    const client = new RawClient(server.url);
    const json = JSON.stringify({
      model,
      input: INPUT,
      seed: 5,
      options: { chunks: 4, chunk_gate: gate },
      ...body,
    });
    await client.write(
      `POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`,
    );
    return client;
  }

  for (const format of ['pcm', 'wav', 'mp3'] as const) {
    test(`${format}: the first bytes arrive while the synthesis is held; the whole stream is the whole answer, timing in trailers`, async () => {
      const ended = server.fixture.record.of('tts', 'run-end').length;
      const gate = server.gate(`first-${format}`);
      const client = await held('tts', { response_format: format }, gate.path);
      // A WAV's header alone is not audio: wait for samples behind it.
      const audioFrom = format === 'wav' ? 44 : 0;
      await client.until(
        `${format} bytes while the run is held`,
        () => (client.response?.body.length ?? 0) > audioFrom,
      );
      assert.equal(server.fixture.record.of('tts', 'run-end').length, ended, 'the gated run is still going');
      const head = client.response!;
      assert.equal(head.status, 200);
      assert.equal(head.headers['transfer-encoding'], 'chunked');
      assert.equal(head.headers['content-length'], undefined, 'no length is known yet');
      assert.equal(
        head.headers['content-type'],
        { pcm: 'application/octet-stream', wav: 'audio/wav', mp3: 'audio/mpeg' }[format],
      );
      assert.equal(
        head.headers['trailer'],
        'X-AudioCPP-Wall-Ms, X-AudioCPP-Audio-Duration-Ms, X-AudioCPP-RTF',
      );
      if (format === 'wav') readWavHeader(head.body, 'streamed');

      await gate.open();
      await client.until('the stream to complete', () => client.response?.complete === true);
      const streamed = client.response!.body;
      client.socket.destroy();
      const trailers = trailersOf(client.raw);
      assert.ok(trailers, 'a complete stream ends with its trailers');
      for (const name of TIMING) assert.match(trailers[name] ?? '', SIX_DECIMALS, name);
      assert.ok(Math.abs(Number(trailers['x-audiocpp-audio-duration-ms']) - toneMs(INPUT)) <= 0.001);

      // The same request as a whole answer: its length and timing in headers, the same audio.
      const whole = await post(server.url, '/v1/audio/speech', {
        model: 'tts',
        input: INPUT,
        seed: 5,
        options: { chunks: 4 },
        response_format: format,
        stream: false,
      });
      assert.equal(whole.status, 200);
      assert.equal(Number(whole.headers.get('content-length')), whole.body.length);
      for (const name of TIMING) assert.match(whole.headers.get(name) ?? '', SIX_DECIMALS, name);
      if (format === 'mp3') {
        const got = decode(streamed, scratch);
        assert.equal(got.codec, 'mp3');
        assert.ok(Math.abs(got.seconds - decode(whole.body, scratch).seconds) < 0.08, `${got.seconds} s`);
      } else if (format === 'wav') {
        assert.equal(readWavHeader(whole.body).dataBytes, readWavHeader(streamed, 'streamed').dataBytes);
        assert.ok(streamed.subarray(44).equals(whole.body.subarray(44)), 'the same samples');
      } else assert.ok(streamed.equals(whole.body), 'the same PCM16');
    });
  }

  test('an error before the first byte is a plain JSON error with its status; after it the chunked body is cut and logged', async () => {
    // Held before any audio: the watchdog's 504 is answered as any error is.
    const runGate = server.gate('never-run');
    const early = await post(server.url, '/v1/audio/speech', {
      model: 'tts-cut',
      input: INPUT,
      options: { run_gate: runGate.path },
    });
    assert.ok(errorOf(early, 504, 'timeout_error').includes('max_inference_ms'));

    // Held after the first chunk: the 200 and the first bytes are out, so the body is cut.
    for (const format of ['pcm', 'wav', 'mp3'] as const) {
      const gate = server.gate(`never-${format}`);
      const client = await held('tts-cut', { response_format: format }, gate.path);
      const res = await client.finished();
      assert.equal(res.status, 200, format);
      assert.ok(res.body.length > 0, `${format}: bytes came before the failure`);
      assert.equal(res.complete, false, `${format}: no last chunk: the client sees an incomplete body`);
      assert.ok(
        server.logs.some(
          (line) => line.includes(`the ${format} stream was cut after`) && line.includes('tts-cut'),
        ),
        `${format}: the cut is logged`,
      );
    }
    // The model's one session is free again (the serial runtime's lock): the cut runs gave it back.
    assert.equal(
      (await post(server.url, '/v1/audio/speech', { model: 'tts-cut', input: 'still here' })).status,
      200,
    );
  });

  test('an HTTP/1.0 client, which cannot tell a cut body from a whole one, gets the whole answer', async () => {
    const client = new RawClient(server.url);
    const json = JSON.stringify({ model: 'tts', input: INPUT, seed: 5 });
    await client.write(
      `POST /v1/audio/speech HTTP/1.0\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`,
    );
    const res = await client.finished();
    assert.equal(res.status, 200);
    assert.equal(res.headers['transfer-encoding'], undefined);
    assert.equal(Number(res.headers['content-length']), res.body.length);
    for (const name of TIMING) assert.match(res.headers[name] ?? '', SIX_DECIMALS, name);
    assert.equal(readWavHeader(res.body).dataBytes, Math.round((RATE * toneMs(INPUT)) / 1000) * 2);
  });

  test("the openai SDK's default call gets a streamed answer that decodes: mp3, and the server's wav", async () => {
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'sk-none', maxRetries: 0 });
    const mp3 = await client.audio.speech
      .create({ model: 'tts', voice: 'alloy', input: INPUT, response_format: 'mp3' })
      .withResponse();
    assert.equal(mp3.response.headers.get('transfer-encoding'), 'chunked');
    const got = decode(Buffer.from(await mp3.data.arrayBuffer()), scratch);
    assert.equal(got.codec, 'mp3');
    assert.ok(Math.abs(got.seconds - toneMs(INPUT) / 1000) < 0.08, `${got.seconds} s`);

    const wav = await client.audio.speech.create({ model: 'tts', voice: 'alloy', input: INPUT });
    const header = readWavHeader(Buffer.from(await wav.arrayBuffer()), 'streamed');
    assert.equal(header.sampleRate, RATE);
    assert.ok(Math.abs((header.dataBytes / 2 / RATE) * 1000 - toneMs(INPUT)) < 0.05);
  });
});

test('spare ffmpeg encoders: one is started after an mp3 answer, and none is left once the server closed', async () => {
  await withServer({ models: [fixtureModel('tts', { task: 'tts' })] }, async (s) => {
    const res = await post(s.url, '/v1/audio/speech', {
      model: 'tts',
      input: 'spare',
      response_format: 'mp3',
    });
    assert.equal(res.status, 200);
    await waitUntil('a spare encoder waits', () => s.voxd.codec.spareCount === 1);
    assert.ok(childrenNamed(['ffmpeg']) >= 1);
    // The next answer takes it (and another is started for the one after).
    const again = await post(s.url, '/v1/audio/speech', {
      model: 'tts',
      input: 'spare',
      response_format: 'mp3',
    });
    assert.ok(again.body.equals(res.body), 'the same bytes from the spare');
    await waitUntil('a spare encoder waits again', () => s.voxd.codec.spareCount === 1);
  });
  await waitUntil('no ffmpeg is left', () => childrenNamed(['ffmpeg']) === 0);
});
