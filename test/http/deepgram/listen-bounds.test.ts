/**
 * `/v1/listen`'s bounds and bad input (issue 41): a bad query is a 400 at the upgrade naming the
 * parameter and the value; a text frame that is not Deepgram's closes 1008 DATA-0000 naming it;
 * odd-length linear16 frames are one stream (the odd byte waits for its pair); a client that
 * leaves mid-utterance, or stops sending mid-utterance (1011 NET-0001 at deepgram_idle_timeout_ms),
 * frees its slot; many sockets at once each get their transcript; the shutdown finishes the
 * utterance going on, sends its final and Metadata, and closes 1001.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { MAX_WAITING_TURNS } from '../../../src/http/realtime/turns.js';
import { paced, RATE, REFERENCE, spoken } from '../../helpers/deepgram-listen.js';
import { librivoxWav } from '../../helpers/librivox.js';
import { suiteServer } from '../../helpers/suite-server.js';
import { get, startServer, type TestServer, transcribe, waitUntil } from '../../helpers/voxd.js';
import { type Message, openSocket, type Socket } from '../../helpers/websocket.js';
import { wordErrorRate } from '../../helpers/wer.js';

const IDLE_MS = 1500;
/** How soon after its client left (or its timer fired) a slot must be free. */
const FREED_MS = 2000;

const CONFIG = {
  busy_timeout_ms: 0,
  deepgram_idle_timeout_ms: IDLE_MS,
  models: [
    { id: 'pocketsphinx', family: 'pocketsphinx_asr', task: 'asr', mode: 'streaming', lazy: true },
    { id: 'silero-vad', family: 'silero_vad', task: 'vad', lazy: true },
  ],
};

const text = (r: Message) => r.channel.alternatives[0].transcript as string;

async function activeSlots(s: TestServer): Promise<number> {
  const models = (await get(s.url, '/v1/models')).json.data as { id: string; active_slots: number }[];
  return models.find((m) => m.id === 'pocketsphinx')!.active_slots;
}

const freed = (s: TestServer) =>
  waitUntil('pocketsphinx holds no slot', async () => (await activeSlots(s)) === 0, FREED_MS);

const listen = (s: TestServer, query = 'interim_results=true&endpointing=800') =>
  openSocket(`${s.url}/v1/listen?encoding=linear16&sample_rate=${RATE}&${query}`);

/** The close frame's code and reason. */
const closing = (socket: Socket) =>
  new Promise<{ code: number; reason: string }>((resolve) =>
    socket.ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );

/** Sends the clip at real time until the first interim Results (the utterance holds its slot), then stops. */
async function speakUntilHeard(socket: Socket, pcm: Buffer): Promise<void> {
  const stop = new AbortController();
  const heard = socket.messages.next((m: Message) => m.type === 'Results', 0, 20_000);
  void heard.then(
    () => stop.abort(),
    () => stop.abort(),
  );
  await paced(pcm, (frame) => socket.ws.send(frame), { signal: stop.signal });
  await heard;
}

describe('/v1/listen: bad input and bounds', () => {
  const s = suiteServer(CONFIG, { parallel: true });
  // Warm: a cold model's load would hold the first utterance's slot for the load's time.
  before(async () => {
    const res = await transcribe(s.url, 'pocketsphinx', librivoxWav('0880'));
    assert.equal(res.status, 200, res.body.toString());
  });

  test('a bad query is a 400 at the upgrade naming the parameter and its value', async () => {
    const cases: [string, string, RegExp][] = [
      ['encoding=opus&sample_rate=16000', 'encoding', /"opus"/],
      ['encoding=linear16', 'sample_rate', /missing/],
      ['encoding=linear16&sample_rate=12', 'sample_rate', /"12"/],
      ['encoding=linear16&sample_rate=16000&channels=2', 'channels', /"2".*one channel/],
      ['encoding=linear16&sample_rate=16000&interim_results=yes', 'interim_results', /"yes"/],
      ['encoding=linear16&sample_rate=16000&endpointing=soon', 'endpointing', /"soon"/],
      ['encoding=linear16&sample_rate=16000&utterance_end_ms=0', 'utterance_end_ms', /"0"/],
      ['encoding=linear16&sample_rate=16000&punctuate=maybe', 'punctuate', /"maybe"/],
      [
        'encoding=linear16&sample_rate=16000&callback=https%3A%2F%2Fx',
        'callback',
        /calls no URL|results on the socket/,
      ],
    ];
    for (const [query, param, value] of cases) {
      const refused = await openSocket(`${s.url}/v1/listen?${query}`).then(
        () => assert.fail(`${query}: upgraded`),
        (err: { status: number; body: string }) => err,
      );
      assert.equal(refused.status, 400, `${query}: ${refused.body}`);
      const { error } = JSON.parse(refused.body);
      assert.equal(error.param, param, query);
      assert.match(error.message, value, query);
    }
  });

  test('a text frame that is not a Deepgram message closes 1008 DATA-0000 naming it', async () => {
    for (const [frame, shown] of [
      ['{"type":"Speak","text":"hi"}', /"Speak"/],
      ['not json', /not JSON/],
      // Refused by its size, before any parse.
      [`{"type":"KeepAlive","pad":"${'x'.repeat(5000)}"}`, /5\d{3} bytes is no Deepgram message/],
    ] as const) {
      const socket = await listen(s);
      const closed = closing(socket);
      socket.send(frame);
      const { code, reason } = await closed;
      assert.equal(code, 1008, reason);
      assert.match(reason, /^DATA-0000 /);
      assert.match(reason, shown);
    }
  });

  test('odd-length linear16 frames are one stream: the odd byte waits for its pair', async () => {
    const clip = spoken(['0890']);
    const socket = await listen(s, 'endpointing=800');
    // 1201-byte frames: every other frame starts mid-sample.
    await paced(clip.pcm, (frame) => socket.ws.send(frame), { frameBytes: 1201 });
    socket.send({ type: 'CloseStream' });
    await socket.messages.next('Metadata', 0, 20_000);
    const heard = socket.messages.all
      .filter((m: Message) => m.type === 'Results' && m.is_final)
      .map(text)
      .join(' ');
    // Misaligned samples would be noise: nothing, or nothing like the words.
    assert.ok(wordErrorRate(REFERENCE['0890'], heard) <= 0.5, heard);
  });

  test('a client that leaves mid-utterance frees its slot', async () => {
    const socket = await listen(s);
    await speakUntilHeard(socket, spoken(['0870']).pcm);
    assert.equal(await activeSlots(s), 1, 'the utterance holds its slot');
    socket.ws.terminate();
    await freed(s);
  });

  test('a client that stops sending mid-utterance is closed 1011 NET-0001 at the idle timeout, its slot freed', async () => {
    const socket = await listen(s);
    const closed = closing(socket);
    await speakUntilHeard(socket, spoken(['0870']).pcm);
    const stopped = performance.now();
    const { code, reason } = await closed;
    assert.equal(code, 1011, reason);
    assert.match(reason, /^NET-0001 .*deepgram_idle_timeout_ms/);
    assert.ok(performance.now() - stopped < IDLE_MS + 1000, 'closed at the idle timeout');
    await freed(s);
  });

  test(`utterances sent in one frame, more than ${MAX_WAITING_TURNS} + 1 turns, are all transcribed: the socket waits, no turn is dropped`, async () => {
    // Seven utterances at once (fuzz seed 1271700375 case 2608): server VAD finds more turns than
    // may wait, and must read the rest at the model's pace rather than end the session.
    const ids = ['0880', '0930', '0880', '0930', '0880', '0930', '0880'] as const;
    const clip = spoken([...ids], { pauseMs: 1200 });
    const socket = await listen(s, 'endpointing=500');
    socket.ws.send(clip.pcm);
    socket.send({ type: 'CloseStream' });
    await socket.messages.next('Metadata', 0, 120_000);
    assert.equal(await socket.closed, 1000);
    // The stream ended before server VAD had examined it: its finals come from CloseStream, not
    // from endpointing (speech_final false), one per utterance.
    const finals = socket.messages.all.filter((m: Message) => m.type === 'Results' && m.is_final);
    assert.ok(finals.length >= ids.length, `${finals.length} finals: ${finals.map(text).join(' | ')}`);
    const heard = finals.map(text).join(' ');
    assert.ok(wordErrorRate(clip.reference, heard) <= 0.5, heard);
  });

  test('many sockets at once each get their transcript', async () => {
    const clip = spoken(['0880'], { tailMs: 1000 });
    const sockets = await Promise.all([0, 1, 2, 3].map(() => listen(s, 'endpointing=500')));
    await Promise.all(
      sockets.map(async (socket) => {
        await paced(clip.pcm, (frame) => socket.ws.send(frame));
        socket.send({ type: 'CloseStream' });
        await socket.messages.next('Metadata', 0, 60_000);
        assert.equal(await socket.closed, 1000);
        const heard = socket.messages.all.filter((m: Message) => m.type === 'Results' && m.is_final);
        assert.ok(
          wordErrorRate(REFERENCE['0880'], heard.map(text).join(' ')) <= 0.5,
          heard.map(text).join(' '),
        );
      }),
    );
    await freed(s);
  });
});

describe('/v1/listen at shutdown', () => {
  test('the utterance going on is finished: its final, then Metadata, then 1001', async () => {
    const server = await startServer(CONFIG, { parallel: true });
    let closing_: Promise<void> | undefined;
    try {
      const socket = await listen(server);
      await speakUntilHeard(socket, spoken(['0870']).pcm);
      closing_ = server.close();
      assert.equal(await socket.closed, 1001);
      const types = socket.messages.types();
      const final = socket.messages.all.find((m: Message) => m.type === 'Results' && m.is_final);
      assert.ok(final && text(final).length > 0, types.join(' '));
      assert.equal(types.at(-1), 'Metadata', types.join(' '));
    } finally {
      await (closing_ ?? server.close());
    }
  });
});
