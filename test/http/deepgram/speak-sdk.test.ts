/**
 * `@deepgram/sdk` 5.13.0, unmodified, pointed at voxd by its `environment` alone (issue 41): the
 * streaming speak socket fed text word by word as a language model writes it (several Speak
 * messages per sentence, words cut in half), Flush, and the REST `speak.v1.audio.generate`. The
 * audio, fed back to voxd's STT (pocketsphinx), must be heard as well as the same text spoken
 * through /v1/audio/speech. Engines: flite speaks, pocketsphinx listens.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DeepgramClient } from '@deepgram/sdk';
import { decodeWav } from '../../../src/audio/wav-decode.js';
import { encodeWav } from '../../../src/audio/wav-encode.js';
import { FLITE, lazyModel } from '../../helpers/models.js';
import { suiteServer } from '../../helpers/suite-server.js';
import { post, transcribe } from '../../helpers/voxd.js';
import { wordErrorRate } from '../../helpers/wer.js';

const POCKETSPHINX = lazyModel('pocketsphinx', 'pocketsphinx_asr', 'asr');
const TEXT = 'Please call me tomorrow morning. The weather is nice today.';
/** The text as a language model streams it: words, and words cut in half. */
const FRAGMENTS = [
  'Please',
  ' call',
  ' me',
  ' tomor',
  'row',
  ' mor',
  'ning.',
  ' The',
  ' wea',
  'ther',
  ' is',
  ' nice',
  ' to',
  'day.',
];

describe('@deepgram/sdk 5.13.0 against voxd', () => {
  const s = suiteServer({ models: [FLITE, POCKETSPHINX] });
  const client = () => {
    const ws = s.url.replace(/^http/, 'ws');
    return new DeepgramClient({
      apiKey: 'unused',
      environment: { base: s.url, production: ws, agent: ws, agentRest: s.url },
    });
  };

  /** What pocketsphinx hears in 16-bit mono PCM at `rate`. */
  async function heard(pcm: Buffer, rate: number): Promise<string> {
    const samples = new Float32Array(pcm.length / 2);
    for (let i = 0; i < samples.length; i++) samples[i] = pcm.readInt16LE(i * 2) / 32768;
    const res = await transcribe(
      s.url,
      'pocketsphinx',
      encodeWav({ samples, sampleRate: rate, channels: 1 }),
    );
    assert.equal(res.status, 200, res.body.toString());
    return res.json.text as string;
  }

  /** The same text through /v1/audio/speech: the WER the Deepgram paths must match. */
  async function baselineWer(): Promise<number> {
    const res = await post(s.url, '/v1/audio/speech', {
      model: 'flite',
      input: TEXT,
      response_format: 'wav',
    });
    assert.equal(res.status, 200, res.body.toString());
    const audio = decodeWav(res.body);
    const transcript = await transcribe(s.url, 'pocketsphinx', res.body);
    assert.equal(transcript.status, 200);
    assert.equal(audio.channels, 1);
    return wordErrorRate(TEXT, transcript.json.text as string);
  }

  test('the speak socket: word-by-word Speak, Flush -> audio then Flushed, heard as well as /v1/audio/speech', async () => {
    const socket = await client().speak.v1.connect({
      model: 'aura-2-thalia-en',
      encoding: 'linear16',
      sample_rate: '24000',
    });
    // Binary frames reach the SDK's handler as Blobs: their bytes are read in arrival order.
    const order: (Promise<Buffer> | { type: string; sequence_id?: number })[] = [];
    let flushed: () => void;
    const done = new Promise<void>((resolve) => {
      flushed = resolve;
    });
    socket.on('message', (message) => {
      if (message instanceof Blob) order.push(message.arrayBuffer().then((b) => Buffer.from(b)));
      else if (typeof message === 'object') {
        order.push(message);
        if (message.type === 'Flushed') flushed();
      }
    });
    socket.connect();
    await socket.waitForOpen();
    try {
      for (const text of FRAGMENTS) socket.sendText({ type: 'Speak', text });
      socket.sendFlush({ type: 'Flush' });
      await done;
    } finally {
      socket.close();
    }
    const items = await Promise.all(order);
    const types = items.map((item) => (Buffer.isBuffer(item) ? 'audio' : item.type));
    assert.equal(types[0], 'Metadata');
    assert.equal(types.at(-1), 'Flushed');
    assert.deepEqual(items.at(-1), { type: 'Flushed', sequence_id: 0 });
    const pcm = Buffer.concat(items.filter((item): item is Buffer => Buffer.isBuffer(item)));
    assert.ok(pcm.length > 2 * 24000, `${pcm.length} bytes: more than a second of 24 kHz audio`);
    const wer = wordErrorRate(TEXT, await heard(pcm, 24000));
    const baseline = await baselineWer();
    assert.ok(wer <= baseline, `WER ${wer} through /v1/speak, ${baseline} through /v1/audio/speech`);
  });

  test('the REST generate call: raw linear16 with container=none, a WAV by default', async () => {
    const dg = client();
    const raw = await dg.speak.v1.audio.generate({
      text: TEXT,
      model: 'aura-2-thalia-en',
      encoding: 'linear16',
      sample_rate: 16000,
      container: 'none',
    });
    const pcm = Buffer.from(await raw.arrayBuffer());
    assert.ok(pcm.length > 2 * 16000, `${pcm.length} bytes`);
    const wer = wordErrorRate(TEXT, await heard(pcm, 16000));
    assert.ok(wer <= (await baselineWer()), `WER ${wer}`);
    const wav = await dg.speak.v1.audio.generate({
      text: 'Hello world.',
      encoding: 'mulaw',
      sample_rate: 8000,
    });
    const bytes = Buffer.from(await wav.arrayBuffer());
    assert.equal(bytes.subarray(0, 4).toString(), 'RIFF');
    assert.equal(bytes.readUInt16LE(20), 7, 'WAVE_FORMAT_MULAW');
    assert.equal(bytes.readUInt32LE(24), 8000);
    // Streamed as it is made: the sizes are not known when the header goes out.
    assert.equal(bytes.readUInt32LE(40), 0xffffffff);
    assert.ok(bytes.length > 44 + 4000, `${bytes.length} bytes`);
  });
});

describe('@deepgram/sdk against a voxd with API keys', () => {
  const KEY = 'dg-test-key';
  const s = suiteServer({ api_keys: [{ key: KEY, scope: 'inference' }], models: [FLITE] });
  const client = (apiKey: string) => {
    const ws = s.url.replace(/^http/, 'ws');
    return new DeepgramClient({
      apiKey,
      environment: { base: s.url, production: ws, agent: ws, agentRest: s.url },
    });
  };

  test('the key as the SDK sends it (Authorization: Token) opens the socket and the REST call; a wrong one is refused', async () => {
    const res = await client(KEY).speak.v1.audio.generate({ text: 'Hello.', container: 'none' });
    assert.ok(Buffer.from(await res.arrayBuffer()).length > 0);
    await assert.rejects(client('wrong').speak.v1.audio.generate({ text: 'Hello.' }), /401|invalid_api_key/);
    const socket = await client(KEY).speak.v1.connect({ model: 'aura-2-thalia-en', reconnectAttempts: 0 });
    const flushed = new Promise<void>((resolve) =>
      socket.on('message', (m) => {
        if (typeof m === 'object' && !(m instanceof Blob) && m.type === 'Flushed') resolve();
      }),
    );
    socket.connect();
    await socket.waitForOpen();
    try {
      socket.sendText({ type: 'Speak', text: 'Hello.' });
      socket.sendFlush({ type: 'Flush' });
      await flushed;
    } finally {
      socket.close();
    }
  });
});
