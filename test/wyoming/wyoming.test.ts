/**
 * The Wyoming listener with the fixture engines, driven by a client written from the protocol
 * (test/helpers/wyoming.ts): describe/info, a transcription (the fixture reports the audio it was
 * given), a synthesis in chunks, malformed frames, events out of order, busy models, a client that
 * leaves mid-synthesis, and the shutdown. The spoken round trip with real engines is in
 * test/engines/pocketsphinx/wyoming.test.ts.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, test } from 'node:test';
import { toneWav } from '../helpers/samples.js';
import { suiteServer } from '../helpers/suite-server.js';
import { fixtureModel, get, post, waitUntil, withServer } from '../helpers/voxd.js';
import { audioOf, WyomingClient } from '../helpers/wyoming.js';

const WYOMING = { wyoming_port: 0 };
const portOf = (s: { voxd: { wyoming?: { port: number } } }) => s.voxd.wyoming!.port;

/** A sample of /metrics: `name{labels}`'s value, 0 when absent. */
async function metric(url: string, series: string): Promise<number> {
  const text = (await get(url, '/metrics')).body.toString();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}
const exchanges = (kind: string, model: string, outcome: string) =>
  `voxd_exchanges_total{protocol="wyoming",kind="${kind}",model="${model}",outcome="${outcome}"}`;

/** 0.25 s of a tone at 16 kHz, PCM16. */
const TONE = Buffer.alloc(8000);
for (let i = 0; i < 4000; i++) TONE.writeInt16LE(Math.round(8000 * Math.sin(i / 4)), i * 2);
const FORMAT = { rate: 16000, width: 2, channels: 1 };

describe('Wyoming listener', () => {
  const s = suiteServer({
    ...WYOMING,
    models: [
      fixtureModel('asr', { task: 'asr' }),
      fixtureModel('tts', { task: 'tts' }),
      fixtureModel('diar', { task: 'diar' }),
    ],
  });

  test('describe -> info: the ASR models and the speech models, installed', async () => {
    const c = await WyomingClient.open(portOf(s));
    try {
      c.send('describe');
      const { data } = await c.next('info');
      assert.deepEqual(
        data.asr[0].models.map((m: { name: string }) => m.name),
        ['asr'],
      );
      assert.equal(data.asr[0].models[0].installed, true);
      assert.deepEqual(data.asr[0].models[0].languages, ['en']);
      assert.equal(data.asr[0].supports_transcript_streaming, false);
      // The fixture has one voice, which every OpenAI name speaks: the model alone
      // (test/wyoming/voice-list.test.ts lists real engines' voices).
      const voices = data.tts[0].voices.map((v: { name: string }) => v.name);
      assert.deepEqual(voices, ['tts']);
      assert.equal(data.tts[0].supports_synthesize_streaming, true);
    } finally {
      await c.close();
    }
  });

  test('transcribe + audio-start/chunk/stop -> transcript; 8-bit stereo 8 kHz audio is converted', async () => {
    const c = await WyomingClient.open(portOf(s));
    try {
      c.send('transcribe', { name: 'asr', language: 'en' });
      c.send('audio-start', FORMAT);
      c.send('audio-chunk', FORMAT, TONE);
      c.send('audio-chunk', FORMAT, TONE);
      c.send('audio-stop');
      const transcript = await c.next('transcript');
      const report = JSON.parse(transcript.data.text);
      assert.equal(report.audio.samples, 8000, 'two chunks of 4000 samples');
      assert.equal(report.audio.sample_rate, 16000);
      assert.equal(transcript.data.language, 'en');
      // Another exchange on the same connection: u8, stereo, 8 kHz, no transcribe (the first ASR model).
      const seen = c.events.length;
      const stereo = { rate: 8000, width: 1, channels: 2 };
      c.send('audio-start', stereo);
      c.send('audio-chunk', stereo, Buffer.alloc(1600, 200));
      c.send('audio-stop');
      const second = JSON.parse((await c.next('transcript', seen)).data.text);
      assert.equal(second.audio.samples, 1600, '800 stereo frames at 8 kHz, 1600 mono at 16 kHz');
      assert.ok(second.audio.rms > 0.5, `u8 200 is loud: ${second.audio.rms}`);
    } finally {
      await c.close();
    }
  });

  test('synthesize -> audio-start, audio-chunk..., audio-stop', async () => {
    const c = await WyomingClient.open(portOf(s));
    try {
      c.send('synthesize', { text: 'Hello there.', voice: { name: 'tts' } });
      await c.next('audio-stop');
      const types = c.types();
      assert.equal(types[0], 'audio-start');
      assert.equal(types.at(-1), 'audio-stop');
      const start = c.events[0]!.data;
      assert.equal(start.width, 2);
      assert.equal(start.channels, 1);
      assert.ok(start.rate > 0);
      assert.ok(audioOf(c.events).length > 0);
      // The same text over HTTP is the same audio.
      const http = await post(s.url, '/v1/audio/speech', {
        model: 'tts',
        input: 'Hello there.',
        response_format: 'pcm',
        sample_rate: start.rate,
      });
      assert.equal(http.status, 200);
      const wyoming = audioOf(c.events);
      assert.equal(wyoming.length, http.body.length);
      assert.ok(wyoming.equals(http.body), 'Wyoming and HTTP speak the same samples');
    } finally {
      await c.close();
    }
  });

  test('streamed synthesis: text cut mid-word, each sentence spoken once complete, the repeat not spoken twice', async () => {
    const c = await WyomingClient.open(portOf(s));
    try {
      c.send('synthesize-start', { voice: { name: 'tts' } });
      for (const piece of ['The wea', 'ther is ni', 'ce to', 'day.', ' Let us ', 'go out'])
        c.send('synthesize-chunk', { text: piece });
      // The first sentence is spoken before the text ends: its audio comes while the client waits.
      await c.next('audio-stop');
      assert.equal(c.types().filter((t) => t === 'audio-start').length, 1);
      c.send('synthesize-chunk', { text: 'side. And' });
      c.send('synthesize', { text: 'The weather is nice today. Let us go outside. And rest.' });
      c.send('synthesize-chunk', { text: ' rest.' });
      c.send('synthesize-stop');
      await c.next('synthesize-stopped');
      const types = c.types();
      assert.equal(types.filter((t) => t === 'audio-start').length, 3, types.join(' '));
      assert.equal(types.at(-1), 'synthesize-stopped');
      // Each sentence's audio is what HTTP speaks for that sentence.
      const runs: Buffer[] = [];
      let current: Buffer[] = [];
      for (const e of c.events) {
        if (e.type === 'audio-start') current = [];
        if (e.type === 'audio-chunk') current.push(e.payload!);
        if (e.type === 'audio-stop') runs.push(Buffer.concat(current));
      }
      const rate = c.events.find((e) => e.type === 'audio-start')!.data.rate;
      for (const [i, sentence] of [
        'The weather is nice today.',
        'Let us go outside.',
        'And rest.',
      ].entries()) {
        const http = await post(s.url, '/v1/audio/speech', {
          model: 'tts',
          input: sentence,
          response_format: 'pcm',
          sample_rate: rate,
        });
        assert.ok(runs[i]!.equals(http.body), `sentence ${i}: ${sentence}`);
      }
    } finally {
      await c.close();
    }
  });

  /** Opens a connection, sends what `send` sends, and gives the error that ends the connection. */
  const refusal = async (send: (c: WyomingClient) => void) => {
    const c = await WyomingClient.open(portOf(s));
    try {
      send(c);
      return await c.refusal();
    } finally {
      c.socket.destroy();
    }
  };

  test('errors: a refused event is an error event and the end of its connection (as the reference servers do); so is a malformed frame', async () => {
    assert.equal((await refusal((c) => c.send('audio-chunk', FORMAT, TONE))).data.code, 'invalid_event');
    const bad = await refusal((c) => c.send('audio-start', { rate: 16000, width: 7, channels: 1 }));
    assert.equal(bad.data.code, 'invalid_audio');
    assert.match(bad.data.text, /width: 7/);
    const task = await refusal((c) => {
      c.send('transcribe', { name: 'tts' });
      c.send('audio-start', FORMAT);
    });
    assert.match(task.data.text, /task 'tts'/);
    const voice = await refusal((c) => c.send('synthesize', { text: 'x', voice: { name: 'nope' } }));
    assert.equal(voice.data.code, 'model_not_found');
    // A header that is not JSON: the stream cannot be read past it.
    const frame = await refusal((c) => c.socket.write('{"type": "describe"\n'));
    assert.equal(frame.data.code, 'invalid_event');
    // Another connection is served as ever.
    const c = await WyomingClient.open(portOf(s));
    try {
      c.send('describe');
      await c.next('info');
    } finally {
      await c.close();
    }
  });

  test('audio formats out of range (rate 1000..384000, width 1..4, channels 1..8, integers) and partial frames are invalid_audio naming the field, and end the connection', async () => {
    const bad: [Record<string, unknown>, RegExp][] = [
      [{ ...FORMAT, rate: 999 }, /rate: 999 is invalid; expected an integer from 1000 to 384000/],
      [{ ...FORMAT, rate: 384_001 }, /rate: 384001/],
      [{ ...FORMAT, rate: '16000' }, /rate: "16000"/],
      [{ ...FORMAT, width: 0 }, /width: 0 is invalid; expected an integer from 1 to 4/],
      [{ ...FORMAT, width: 5 }, /width: 5/],
      [{ ...FORMAT, channels: 0 }, /channels: 0 is invalid; expected an integer from 1 to 8/],
      [{ ...FORMAT, channels: 9 }, /channels: 9/],
      [{ ...FORMAT, channels: 1.5 }, /channels: 1.5/],
    ];
    for (const [format, message] of bad) {
      const error = await refusal((c) => c.send('audio-start', format));
      assert.equal(error.data.code, 'invalid_audio');
      assert.match(error.data.text, message);
    }
    // A large field (within the 100000 values a data block may have) is shown as a short prefix,
    // not echoed whole.
    const long = await refusal((c) =>
      c.send('audio-start', { ...FORMAT, rate: Array.from({ length: 50_000 }, () => 1) }),
    );
    assert.equal(long.data.code, 'invalid_audio');
    assert.ok(long.data.text.length < 1000, `${long.data.text.length} characters`);
    const partial = await refusal((c) => {
      c.send('transcribe', { name: 'asr' });
      c.send('audio-start', FORMAT);
      c.send('audio-chunk', { ...FORMAT, channels: 2 }, Buffer.alloc(6));
    });
    assert.equal(partial.data.code, 'invalid_audio');
    assert.match(partial.data.text, /6 bytes are not whole frames of 2 channel\(s\) of 2 byte\(s\)/);
  });

  test('limits: a header line without a newline past 64 KiB, a data_length past 1 MiB and a payload_length past 4 MiB end the connection', async () => {
    for (const bytes of [
      Buffer.alloc(70 * 1024, 0x20),
      Buffer.from(`${JSON.stringify({ type: 'describe', data_length: 2 * 1024 * 1024 })}\n`),
      Buffer.from(`${JSON.stringify({ type: 'audio-chunk', payload_length: 5 * 1024 * 1024 })}\n`),
    ]) {
      const c = await WyomingClient.open(portOf(s));
      c.socket.write(bytes);
      assert.equal((await c.next('error')).data.code, 'event_too_large');
      await c.closed;
    }
  });
});

test('wyoming_asr_model: a transcription that names no model goes to it; one that names a model, to that one', async () => {
  await withServer(
    {
      ...WYOMING,
      wyoming_asr_model: 'second',
      models: [fixtureModel('first', { task: 'asr' }), fixtureModel('second', { task: 'asr' })],
    },
    async (s) => {
      const c = await WyomingClient.open(portOf(s));
      try {
        for (const [i, transcribe] of [{}, { name: 'first' }].entries()) {
          c.send('transcribe', transcribe);
          c.send('audio-start', FORMAT);
          c.send('audio-chunk', FORMAT, TONE);
          c.send('audio-stop');
          await c.nth('transcript', i);
        }
        assert.equal(s.fixture.record.of('second', 'run-start').length, 1);
        assert.equal(s.fixture.record.of('first', 'run-start').length, 1);
      } finally {
        await c.close();
      }
    },
  );
});

test('max_connections counts Wyoming and HTTP connections together: one more hears too_many_connections and is closed; a closed one makes room', async () => {
  await withServer(
    { ...WYOMING, max_connections: 2, models: [fixtureModel('asr', { task: 'asr' })] },
    async (s) => {
      // Read in the process: an HTTP scrape would itself be a connection under the cap.
      const open = async (series: string) => {
        const line = (await s.voxd.metrics.scrape()).text.split('\n').find((l) => l.startsWith(`${series} `));
        return Number(line?.slice(series.length + 1) ?? 0);
      };
      const first = await WyomingClient.open(portOf(s));
      first.send('describe');
      await first.next('info');
      const http = connect(Number(new URL(s.url).port), '127.0.0.1');
      await waitUntil('the HTTP connection is counted', async () => (await open('voxd_connections')) === 2);
      const second = await WyomingClient.open(portOf(s));
      assert.equal((await second.next('error')).data.code, 'too_many_connections');
      await second.closed;
      http.destroy();
      await waitUntil('the HTTP connection is gone', async () => (await open('voxd_connections')) === 1);
      const third = await WyomingClient.open(portOf(s));
      third.send('describe');
      await third.next('info');
      await Promise.all([first.close(), third.close()]);
      await waitUntil('both are gone', async () => (await open('voxd_wyoming_connections')) === 0);
    },
  );
});

test('wyoming_idle_timeout_ms: a silent connection is closed, one left mid-transcription is closed, one waiting for its slot is not', async () => {
  await withServer(
    { ...WYOMING, wyoming_idle_timeout_ms: 200, models: [fixtureModel('asr', { task: 'asr' })] },
    async (s) => {
      const within = (p: Promise<void>, ms: number, what: string) =>
        Promise.race([p, new Promise<void>((_, reject) => setTimeout(() => reject(new Error(what)), ms))]);
      const silent = await WyomingClient.open(portOf(s));
      await within(silent.closed, 5000, 'the silent connection stayed open');

      // audio-start, then nothing: the client is idle, not voxd.
      const left = await WyomingClient.open(portOf(s));
      left.send('transcribe', { name: 'asr' });
      left.send('audio-start', FORMAT);
      left.send('audio-chunk', FORMAT, TONE);
      await within(left.closed, 5000, 'the connection left mid-transcription stayed open');

      // A transcription queued behind a held slot for many idle periods is answered.
      const gate = s.gate('hold');
      const held = post(s.url, '/v1/tasks/run', {
        model: 'asr',
        audio_base64: toneWav().toString('base64'),
        options: { run_gate: gate.path },
      });
      await waitUntil('the holder runs', () => s.fixture.record.of('asr', 'run-start').length === 1);
      const waiting = await WyomingClient.open(portOf(s));
      try {
        waiting.send('transcribe', { name: 'asr' });
        waiting.send('audio-start', FORMAT);
        waiting.send('audio-chunk', FORMAT, TONE);
        waiting.send('audio-stop');
        const queued = () => s.voxd.runtime.get('asr').scheduler.snapshot().queuedRequests;
        await waitUntil('the exchange waits for the slot', () => queued() === 1);
        // Five idle periods pass while voxd, not the client, is the one working.
        await new Promise((resolve) => setTimeout(resolve, 1000));
        assert.equal(waiting.socket.destroyed, false);
        await gate.open();
        await held;
        await waiting.next('transcript');
      } finally {
        await waiting.close();
      }
    },
  );
});

describe('Wyoming exchanges under the admission contract', () => {
  test('[time.admission-timeout] a Wyoming exchange past the busy timeout is error server_busy, which ends its connection; the next connection is served', async () => {
    await withServer(
      { ...WYOMING, models: [fixtureModel('tts', { task: 'tts', busy_timeout_ms: 50 })] },
      async (s) => {
        const gate = s.gate('hold');
        const held = post(s.url, '/v1/tasks/run', {
          model: 'tts',
          text: 'x',
          options: { run_gate: gate.path },
        });
        await waitUntil('the holder runs', () => s.fixture.record.of('tts', 'run-start').length === 1);
        const refused = await WyomingClient.open(portOf(s));
        try {
          refused.send('synthesize', { text: 'hi' });
          assert.equal((await refused.refusal()).data.code, 'server_busy');
        } finally {
          refused.socket.destroy();
        }
        await gate.open();
        assert.equal((await held).status, 200);
        const c = await WyomingClient.open(portOf(s));
        try {
          c.send('synthesize', { text: 'hi' });
          await c.next('audio-stop');
          assert.equal(await metric(s.url, exchanges('tts', 'tts', 'failed')), 1);
          assert.equal(await metric(s.url, exchanges('tts', 'tts', 'completed')), 1);
          assert.equal(await metric(s.url, 'voxd_wyoming_connections'), 1);
        } finally {
          await c.close();
        }
      },
    );
  });

  test('[time.disconnect-executing] a client that leaves mid-synthesis cancels it and frees the slot at once', async () => {
    await withServer(
      {
        ...WYOMING,
        models: [
          fixtureModel('tts', { task: 'tts', default_request_options: { chunks: '4', chunk_ms: '5000' } }),
        ],
      },
      async (s) => {
        const c = await WyomingClient.open(portOf(s));
        c.send('synthesize', { text: 'a long one' });
        await c.next('audio-chunk');
        const scheduler = () => s.voxd.runtime.get('tts').scheduler.snapshot();
        assert.equal(scheduler().activeRequests, 1);
        c.socket.destroy();
        await waitUntil('the slot is free', () => scheduler().activeRequests === 0, 3000);
        assert.equal(s.fixture.record.of('tts', 'run-end').length, 1);
        await waitUntil(
          'counted as cancelled',
          async () => (await metric(s.url, exchanges('tts', 'tts', 'cancelled'))) === 1,
        );
        assert.equal(await metric(s.url, 'voxd_wyoming_connections'), 0);
      },
    );
  });

  test('[time.custom-listener] a shutdown lets the exchange in progress finish, then closes the connection; new ones are refused', async () => {
    await withServer({ ...WYOMING, ui_management: true, models: [] }, async (s) => {
      const gate = s.gate('turn');
      const load = await post(
        s.url,
        '/v1/models/load',
        fixtureModel('asr', { task: 'asr', default_request_options: { run_gate: gate.path } }),
      );
      assert.equal(load.status, 200, load.body.toString());
      const port = portOf(s);
      const c = await WyomingClient.open(port);
      c.send('audio-start', FORMAT);
      c.send('audio-chunk', FORMAT, TONE);
      c.send('audio-stop');
      await waitUntil('the exchange runs', () => s.fixture.record.of('asr', 'run-start').length === 1);
      const closing = s.voxd.close();
      await waitUntil('the shutdown begins', () => s.voxd.runtime.closing);
      await gate.open();
      assert.equal(JSON.parse((await c.next('transcript')).data.text).audio.samples, 4000);
      await c.closed;
      await closing;
      await assert.rejects(
        new Promise((resolve, reject) => {
          const socket = connect(port, '127.0.0.1', () => resolve(socket));
          socket.once('error', reject);
        }),
      );
    });
  });
});
