/**
 * `/v1/listen` driven by `@deepgram/sdk` 5.13.0, unmodified, pointed at voxd by its `environment`
 * alone (issue 41): the live socket (`listen.v1.connect`) fed real speech (LibriVox) in 20-100 ms
 * frames at real time, and the prerecorded calls (`listen.v1.media.transcribeFile`,
 * `transcribeUrl`), transcribed by pocketsphinx with silero finding the utterances.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DeepgramClient } from '@deepgram/sdk';
import { paced, RATE, REFERENCE, spoken } from '../../helpers/deepgram-listen.js';
import { heardOffline, librivoxWav } from '../../helpers/librivox.js';
import { engineSuiteServer, suiteServer } from '../../helpers/suite-server.js';
import type { Message } from '../../helpers/websocket.js';
import { Messages } from '../../helpers/websocket.js';
import { wordErrorRate } from '../../helpers/wer.js';

const LIBRIVOX = '/usr/share/pocketsphinx/test/data/librivox';

const MODELS = [
  { id: 'pocketsphinx', family: 'pocketsphinx_asr', task: 'asr', mode: 'streaming', lazy: true },
  { id: 'silero-vad', family: 'silero_vad', task: 'vad', lazy: true },
];

const text = (r: Message) => r.channel.alternatives[0].transcript as string;

describe("@deepgram/sdk's listen clients against voxd", () => {
  const s = engineSuiteServer(MODELS);

  const client = () => {
    const ws = s.url.replace(/^http/, 'ws');
    return new DeepgramClient({
      apiKey: 'unused',
      environment: { base: s.url, production: ws, agent: ws, agentRest: s.url },
    });
  };

  /** A live socket with `args`; its messages, and a promise of its close code. */
  async function connect(args: Record<string, string>) {
    const socket = await client().listen.v1.connect({
      model: 'nova-3',
      encoding: 'linear16',
      sample_rate: String(RATE),
      Authorization: 'Token unused',
      reconnectAttempts: 0,
      ...args,
    });
    const messages = new Messages();
    const closed = new Promise<number>((resolve) => socket.on('close', (event) => resolve(event.code)));
    socket.on('message', (m) => messages.push(m));
    socket.connect();
    await socket.waitForOpen();
    return { socket, messages, closed };
  }

  test('the live client gets SpeechStarted, interim words, a speech_final, UtteranceEnd, and Metadata at CloseStream', async (t) => {
    const clip = spoken(['0930']);
    const { socket, messages, closed } = await connect({
      interim_results: 'true',
      vad_events: 'true',
      endpointing: '300',
      utterance_end_ms: '1000',
      smart_format: 'true',
      punctuate: 'true',
    });
    await paced(clip.pcm, (frame) => socket.sendMedia(frame), { frameMs: 20 });
    await messages.next('UtteranceEnd', 0, 20_000);
    socket.sendCloseStream({ type: 'CloseStream' });
    const metadata = await messages.next('Metadata', 0, 20_000);
    assert.equal(await closed, 1000);
    const types = messages.types();
    t.diagnostic(types.join(' '));
    const results = messages.all.filter((m) => m.type === 'Results');
    const finals = results.filter((r) => r.is_final);
    const heard = finals.map(text).join(' ');
    t.diagnostic(`finals: ${finals.map(text).join(' | ')}`);
    // The clip's last two words vary between runs of the live search ("amiable himself", "a real boy
    // myself"); its first six never did.
    assert.ok(heard.startsWith(REFERENCE['0930'].split(' ').slice(0, 6).join(' ')), heard);
    assert.ok(
      results.some((r) => !r.is_final),
      'interim Results during speech',
    );
    assert.ok(types.indexOf('SpeechStarted') < types.indexOf('Results'), types.join(' '));
    assert.equal(finals.at(-1).speech_final, true);
    for (const w of finals.flatMap((f) => f.channel.alternatives[0].words))
      assert.ok(w.start < w.end && w.end <= clip.speechEndsMs[0]! / 1000 + 0.1, JSON.stringify(w));
    assert.ok(types.indexOf('UtteranceEnd') > types.lastIndexOf('Results'), types.join(' '));
    assert.equal(metadata.request_id, results[0].metadata.request_id);
    assert.match(metadata.sha256, /^[0-9a-f]{64}$/);
  });

  test('Finalize mid-utterance ends it at once with from_finalize, and detection goes on', async () => {
    const clip = spoken(['0870'], { tailMs: 0 });
    const { socket, messages, closed } = await connect({ interim_results: 'false', endpointing: '1000' });
    // Two seconds of its speech, then Finalize while it goes on.
    const cut = clip.pcm.subarray(0, 2 * Math.round(2.5 * RATE));
    await paced(cut, (frame) => socket.sendMedia(frame), { frameMs: 100 });
    socket.sendFinalize({ type: 'Finalize' });
    const final = await messages.next('Results', 0, 20_000);
    assert.equal(final.is_final, true);
    assert.equal(final.from_finalize, true);
    assert.equal(final.speech_final, false);
    assert.ok(text(final).length > 0, 'the words spoken so far');
    // No speech going on: a Finalize answers an empty final.
    socket.sendFinalize({ type: 'Finalize' });
    const empty = await messages.next((m: Message) => m.type === 'Results' && m !== final, 0, 20_000);
    assert.equal(empty.from_finalize, true);
    assert.equal(text(empty), '');
    socket.sendCloseStream({ type: 'CloseStream' });
    await messages.next('Metadata', 0, 20_000);
    assert.equal(await closed, 1000);
  });

  test('transcribeFile answers the prerecorded shape, with the words /v1/audio/transcriptions hears', async () => {
    const wav = librivoxWav('0890');
    const answer = await client().listen.v1.media.transcribeFile(wav, {
      model: 'nova-3',
      utterances: true,
      smart_format: true,
    });
    const reply = answer as unknown as Message;
    const alternative = reply.results.channels[0].alternatives[0];
    const offline = await heardOffline(s.url, 'pocketsphinx', wav, 'clip.wav');
    assert.equal(alternative.transcript, offline.text);
    assert.equal(alternative.words.map((w: Message) => w.word).join(' '), alternative.transcript);
    assert.ok(alternative.words.every((w: Message) => w.start <= w.end && w.end <= 5.4));
    assert.ok(Math.abs(reply.metadata.duration - (wav.length - 44) / 2 / RATE) < 0.01);
    assert.equal(
      reply.results.utterances.map((u: Message) => u.transcript).join(' '),
      alternative.transcript,
    );
  });

  test('transcribeUrl reads a file under file_roots and refuses a remote URL, naming url', async () => {
    const dg = client();
    await assert.rejects(
      dg.listen.v1.media.transcribeUrl({ url: 'https://dpgr.am/spacewalk.wav' }),
      (err: Message) => err.statusCode === 400 && /url/.test(JSON.stringify(err.body)),
    );
    await assert.rejects(
      dg.listen.v1.media.transcribeUrl({ url: `${LIBRIVOX}/sense_and_sensibility_01_austen_64kb-0880.wav` }),
      (err: Message) => err.statusCode === 403,
    );
  });
});

describe('transcribeUrl with file_roots', () => {
  const s = suiteServer({ busy_timeout_ms: 0, file_roots: [LIBRIVOX], models: MODELS.slice(0, 1) });

  test('a file: URL under a root is transcribed', async () => {
    const ws = s.url.replace(/^http/, 'ws');
    const dg = new DeepgramClient({
      apiKey: 'unused',
      environment: { base: s.url, production: ws, agent: ws, agentRest: s.url },
    });
    const answer = (await dg.listen.v1.media.transcribeUrl({
      url: `file://${LIBRIVOX}/sense_and_sensibility_01_austen_64kb-0880.wav`,
    })) as unknown as Message;
    const transcript = answer.results.channels[0].alternatives[0].transcript;
    assert.ok(wordErrorRate(REFERENCE['0880'], transcript) <= 0.4, transcript);
  });
});
