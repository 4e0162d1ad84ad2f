/**
 * `/v1/speak` sessions under the fixture engine, whose gates force the orderings (issue 41): a
 * Clear in the middle of a synthesis, many sockets on a two-slot model, clients that leave
 * mid-synthesis, stop sending or never flush, and bad input. The fixture's tone lasts 120 ms plus
 * 40 ms per character at 16 kHz, so the audio a session must send is known to the byte.
 */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { suiteServer } from '../../helpers/suite-server.js';
import {
  fixtureModel,
  get,
  modelStatus,
  startServer,
  tempDir,
  waitUntil,
  whenRuntime,
  withServer,
} from '../../helpers/voxd.js';
import { refusal } from '../../helpers/websocket.js';
import { describe as framesOf, openSpeak } from './speak-socket.js';

/** Bytes of linear16 the fixture speaks for `text` at its 16 kHz. */
const toneBytes = (text: string, rate = 16000) =>
  2 * Math.round((Math.round((16000 * (120 + 40 * [...text].length)) / 1000) * rate) / 16000);

const tts = (id: string, options: Record<string, string> = {}, extra: Record<string, unknown> = {}) =>
  fixtureModel(id, { task: 'tts', default_request_options: options, ...extra });

const scratch = tempDir('voxd-speak-');
after(() => rmSync(scratch, { recursive: true, force: true }));
const gate = (name: string) => join(scratch, `gate-${name}`);

describe('/v1/speak sessions (fixture engine)', () => {
  const s = suiteServer(
    {
      models: [
        tts('tone', {}, { max_input_chars: 60 }),
        tts('held', { chunks: '4', chunk_gate: gate('held') }),
        tts('queue', { run_gate: gate('queue') }, { slots: 2 }),
        tts('hang', { hang: 'true' }),
        tts('broken', { run_fail: 'true' }),
        tts('fifo', { run_gate: gate('fifo') }),
        tts('shared', { runner_gate: gate('shared') }, { slots: 2, isolation: 'model' }),
      ],
    },
    { parallel: true },
  );

  test('Clear mid-sentence: Cleared at once, no audio of the cleared text after it, the slot freed', async () => {
    const c = await openSpeak(s.url, 'model=held&encoding=linear16&sample_rate=16000');
    try {
      c.speak('Hello there, this run is held after its first chunk.');
      c.send({ type: 'Flush' });
      await c.firstAudio();
      assert.equal((await modelStatus(s.url, 'held')).active_slots, 1, 'the synthesis holds its slot');
      c.send({ type: 'Clear' });
      const { message: cleared, at } = await c.next('Cleared');
      assert.equal(cleared.sequence_id, 1, 'one Flush was sent before the Clear');
      await waitUntil(
        'the cleared run freed its slot',
        async () => (await modelStatus(s.url, 'held')).active_slots === 0,
      );
      await waitUntil('the cleared run ended', () => s.fixture.record.of('held', 'run-end').length === 1);
      const [ended] = s.fixture.record.of('held', 'run-end');
      assert.equal((ended as { outcome: string }).outcome, 'aborted', 'the run was cancelled, not finished');
      // The gate opens: a run still going would now send the rest of its audio.
      writeFileSync(gate('held'), '');
      c.speak('Again.');
      c.send({ type: 'Flush' });
      const { message: flushed, at: end } = await c.next('Flushed', at);
      assert.equal(flushed.sequence_id, 1);
      assert.equal(c.audio(at, end).length, toneBytes('Again.'), framesOf(c.frames.slice(at)));
      assert.equal(
        c.frames.filter((f) => 'json' in f && f.json.type === 'Flushed').length,
        1,
        'the cleared flush is not answered',
      );
      const metrics = (await get(s.url, '/metrics')).body.toString();
      for (const outcome of ['cancelled', 'completed'])
        assert.ok(
          metrics.includes(
            `voxd_exchanges_total{protocol="deepgram_speak",kind="tts",model="held",outcome="${outcome}"} 1`,
          ),
          `one ${outcome} segment`,
        );
    } finally {
      c.ws.close();
    }
  });

  test('8 sockets on a 2-slot model: all queue in its FIFO, at most 2 run at once, each gets its own audio', async () => {
    const texts = Array.from({ length: 8 }, (_, i) => `Sentence number ${'x'.repeat(i)}.`);
    const clients = await Promise.all(texts.map(() => openSpeak(s.url, 'model=queue&sample_rate=16000')));
    try {
      for (const [i, c] of clients.entries()) {
        c.speak(texts[i]!);
        c.send({ type: 'Flush' });
      }
      const { runtime } = s.voxd;
      const queue = () => runtime.snapshots().find((m) => m.id === 'queue')!;
      await whenRuntime(
        runtime,
        '2 running and 6 queued',
        () => queue().activeSlots === 2 && queue().queuedRequests === 6,
      );
      writeFileSync(gate('queue'), '');
      const done = await Promise.all(clients.map((c) => c.next('Flushed')));
      for (const [i, c] of clients.entries())
        assert.equal(
          c.audio(0, done[i]!.at).length,
          toneBytes(texts[i]!),
          `socket ${i}: ${framesOf(c.frames)}`,
        );
      let running = 0;
      let most = 0;
      for (const e of s.fixture.record.of('queue')) {
        if (e.type === 'run-start') most = Math.max(most, ++running);
        if (e.type === 'run-end') running--;
      }
      assert.equal(most, 2);
    } finally {
      for (const c of clients) c.ws.close();
    }
  });

  test("sockets are served in the order their text was complete: the model's FIFO", async () => {
    const { runtime } = s.voxd;
    const fifo = () => runtime.snapshots().find((m) => m.id === 'fifo')!;
    const clients = [];
    try {
      for (let i = 0; i < 5; i++) {
        const c = await openSpeak(s.url, 'model=fifo');
        clients.push(c);
        c.speak(`Socket ${i}.`);
        c.send({ type: 'Flush' });
        // The first holds the slot behind the gate; each later one waits in the queue behind the last.
        await whenRuntime(
          runtime,
          `socket ${i} waiting`,
          () => fifo().activeSlots + fifo().queuedRequests === i + 1,
        );
      }
      writeFileSync(gate('fifo'), '');
      const order: number[] = [];
      await Promise.all(clients.map((c, i) => c.next('Flushed').then(() => order.push(i))));
      assert.deepEqual(order, [0, 1, 2, 3, 4]);
    } finally {
      for (const c of clients) c.ws.close();
    }
  });

  test("a Clear on one socket stops a shared runner: another socket's piece lost with it is spoken again", async () => {
    const starts = () => s.fixture.record.of('shared', 'run-start').length;
    const a = await openSpeak(s.url, 'model=shared&sample_rate=16000');
    const b = await openSpeak(s.url, 'model=shared&sample_rate=16000');
    try {
      a.speak('First socket.');
      a.send({ type: 'Flush' });
      await waitUntil("a's run started", () => starts() === 1);
      b.speak('Second socket.');
      b.send({ type: 'Flush' });
      await waitUntil("b's run started", () => starts() === 2);
      // Both wait in the one runner; a's Clear can only stop its run by ending that runner.
      a.send({ type: 'Clear' });
      await a.next('Cleared');
      await waitUntil("b's piece asked again", () => starts() === 3);
      writeFileSync(gate('shared'), '');
      const { at } = await b.next('Flushed');
      assert.equal(b.audio(0, at).length, toneBytes('Second socket.'), framesOf(b.frames));
      assert.ok(!b.frames.some((f) => 'json' in f && f.json.type === 'Warning'), framesOf(b.frames));
    } finally {
      a.ws.close();
      b.ws.close();
    }
  });

  test('a client that leaves mid-synthesis: its run is cancelled and the slot freed', async () => {
    const c = await openSpeak(s.url, 'model=hang');
    const started = s.fixture.record.of('hang', 'run-start').length;
    c.speak('This never ends.');
    c.send({ type: 'Flush' });
    await waitUntil('the run started', () => s.fixture.record.of('hang', 'run-start').length > started);
    assert.equal((await modelStatus(s.url, 'hang')).active_slots, 1);
    c.ws.terminate();
    await waitUntil('the slot is free', async () => (await modelStatus(s.url, 'hang')).active_slots === 0);
    await waitUntil('the run ended', () => s.fixture.record.of('hang', 'run-end').length > started);
  });

  test('segments in order: each Flush answered after its own audio, an empty Flush at once, ids from 0', async () => {
    const c = await openSpeak(s.url, 'model=tone&sample_rate=16000');
    try {
      c.send({ type: 'Flush' });
      c.speak('One. Two');
      c.send({ type: 'Flush' });
      c.speak('Three, four five six, seven');
      c.send({ type: 'Flush' });
      const first = await c.next('Flushed');
      const second = await c.next('Flushed', first.at + 1);
      const third = await c.next('Flushed', second.at + 1);
      assert.deepEqual(
        [first.message.sequence_id, second.message.sequence_id, third.message.sequence_id],
        [0, 1, 2],
      );
      assert.equal(c.audio(0, first.at).length, 0, 'nothing was held at the first Flush');
      assert.equal(c.audio(first.at, second.at).length, toneBytes('One.') + toneBytes('Two'));
      // The first clause is its own piece; the rest, with its comma, is the next.
      assert.equal(
        c.audio(second.at, third.at).length,
        toneBytes('Three, four five six,') + toneBytes('seven'),
      );
    } finally {
      c.ws.close();
    }
  });

  test('a synthesis that fails: one Warning saying why, then 1011; the segment counted failed', async () => {
    const c = await openSpeak(s.url, 'model=broken');
    c.speak('This fails.');
    c.send({ type: 'Flush' });
    assert.deepEqual(await c.closed, { code: 1011, reason: 'synthesis failed' });
    const warnings = c.frames.filter((f) => 'json' in f && f.json.type === 'Warning');
    assert.equal(warnings.length, 1, framesOf(c.frames));
    const [only] = warnings as { json: { code: string; description: string } }[];
    assert.equal(only!.json.code, 'SESSION_ENDING');
    assert.match(only!.json.description, /^the synthesis failed: .*run_fail/);
    const metrics = (await get(s.url, '/metrics')).body.toString();
    assert.ok(
      metrics.includes(
        'voxd_exchanges_total{protocol="deepgram_speak",kind="tts",model="broken",outcome="failed"} 1',
      ),
    );
  });

  test('mulaw at 8 kHz: one byte per sample at the asked rate', async () => {
    const c = await openSpeak(s.url, 'model=tone&encoding=mulaw&sample_rate=8000');
    try {
      c.speak('Hello there.');
      c.send({ type: 'Flush' });
      const { at } = await c.next('Flushed');
      assert.equal(c.audio(0, at).length, toneBytes('Hello there.', 8000) / 2);
    } finally {
      c.ws.close();
    }
  });

  test('bad messages and too long a text are Warnings; the session goes on', async () => {
    const c = await openSpeak(s.url, 'model=tone&sample_rate=16000');
    try {
      c.send({ type: 'Shout', text: 'x' });
      c.send('not json');
      c.ws.send(Buffer.from([1, 2, 3]));
      c.send({ type: 'Speak', text: 42 });
      c.speak('a'.repeat(61));
      // Past what any text within the bound takes as JSON: refused unparsed.
      c.speak('b'.repeat(2000));
      const warnings = await waitFor(c, 'Warning', 6);
      assert.match(warnings[0].description, /type: "Shout" is not a message of \/v1\/speak/);
      assert.match(warnings[1].description, /JSON message/);
      assert.match(warnings[2].description, /binary frames are not messages/);
      assert.match(warnings[3].description, /text: 42 is not a string/);
      assert.match(warnings[4].description, /max_input_chars=60/);
      assert.match(
        warnings[5].description,
        /a message of 20\d\d bytes holds more text than max_input_chars=60/,
      );
      assert.deepEqual(
        warnings.map((w) => w.code),
        [
          'INVALID_MESSAGE',
          'INVALID_MESSAGE',
          'INVALID_MESSAGE',
          'INVALID_MESSAGE',
          'TEXT_TOO_LONG',
          'TEXT_TOO_LONG',
        ],
      );
      assert.equal(warnings[0].warn_msg, warnings[0].description, "LiveKit's field");
      c.speak('Fine.');
      c.send({ type: 'Flush' });
      const { at } = await c.next('Flushed');
      assert.equal(c.audio(0, at).length, toneBytes('Fine.'), 'the dropped text is not spoken');
    } finally {
      c.ws.close();
    }
  });

  test('a bad encoding, sample_rate, container, speed or model is refused at the upgrade, naming it', async () => {
    const cases: [string, number, string, string][] = [
      ['encoding=opus', 400, 'encoding', '"opus"'],
      ['encoding=mulaw&sample_rate=24000', 400, 'sample_rate', '"24000"'],
      ['sample_rate=44100', 400, 'sample_rate', '"44100"'],
      ['container=wav', 400, 'container', '"wav"'],
      ['speed=3', 400, 'speed', '"3"'],
      ['model=nope', 404, 'model', 'nope'],
    ];
    for (const [query, status, param, value] of cases) {
      const { status: got, error } = await refusal(
        `${s.url}/v1/speak?${query.startsWith('model=') ? '' : 'model=tone&'}${query}`,
      );
      assert.equal(got, status, query);
      assert.equal(error.param, param, query);
      assert.ok(error.message.includes(value), `${query}: ${error.message}`);
    }
  });
});

/** The first `n` messages of `type`. */
async function waitFor(c: Awaited<ReturnType<typeof openSpeak>>, type: string, n: number) {
  const found: unknown[] = [];
  let from = 0;
  for (let i = 0; i < n; i++) {
    const { message, at } = await c.next(type, from);
    found.push(message);
    from = at + 1;
  }
  // biome-ignore lint/suspicious/noExplicitAny: plain JSON
  return found as any[];
}

describe('/v1/speak timeouts', () => {
  test('idle: a session that stops sending closes 1011 NET-0001; speaking is not idle; unflushed text holds no slot', async () => {
    await withServer(
      {
        models: [tts('slow', { run_ms: '600' }), tts('tone')],
        deepgram_idle_timeout_ms: 250,
      },
      async (srv) => {
        // A synthesis longer than the idle timeout: the session is working, not idle.
        const speaking = await openSpeak(srv.url, 'model=slow');
        speaking.speak('Slow.');
        speaking.send({ type: 'Flush' });
        await speaking.next('Flushed');
        const closed = await speaking.closed;
        assert.deepEqual(closed, { code: 1011, reason: 'NET-0001' });
        const last = speaking.frames.at(-1)!;
        assert.ok('json' in last && last.json.type === 'Warning', framesOf(speaking.frames));
        assert.match(last.json.description, /deepgram_idle_timeout_ms \(250 ms\)/);
        // Text never flushed and never a whole sentence: no run, no slot, ended at the idle timeout.
        const never = await openSpeak(srv.url, 'model=tone');
        never.speak('half a sentence that never');
        never.speak(' ends');
        assert.deepEqual(await never.closed, { code: 1011, reason: 'NET-0001' });
        assert.equal(srv.fixture.record.of('tone', 'run-start').length, 0);
        assert.equal((await modelStatus(srv.url, 'tone')).active_slots ?? 0, 0);
      },
    );
  });

  test('Close halts at once, as Deepgram documents it: the synthesis in progress is cancelled, its slot freed, then 1000', async () => {
    await withServer({ models: [tts('hung', { hang: 'true' })] }, async (srv) => {
      const c = await openSpeak(srv.url, 'model=hung&sample_rate=16000');
      c.speak('Hello there. And more to come. Half');
      await waitUntil('the run started', () => srv.fixture.record.of('hung', 'run-start').length === 1);
      c.send({ type: 'Close' });
      assert.equal((await c.closed).code, 1000);
      assert.equal(c.audio().length, 0, framesOf(c.frames));
      await waitUntil(
        'the slot is free',
        async () => ((await modelStatus(srv.url, 'hung')).active_slots ?? 0) === 0,
      );
      // The sentence queued behind the hung one never ran.
      assert.equal(srv.fixture.record.of('hung', 'run-start').length, 1);
    });
  });

  test('shutdown: the synthesis in progress and its Flushed finish, then 1001', async () => {
    const srv = await startServer({ models: [tts('slow', { run_ms: '300' })] });
    let closing: Promise<void> | undefined;
    try {
      const c = await openSpeak(srv.url, 'model=slow&sample_rate=16000');
      c.speak('Slow.');
      c.send({ type: 'Flush' });
      await waitUntil('the run started', () => srv.fixture.record.of('slow', 'run-start').length === 1);
      closing = srv.close();
      const { at } = await c.next('Flushed');
      assert.equal(c.audio(0, at).length, toneBytes('Slow.'));
      assert.equal((await c.closed).code, 1001);
    } finally {
      await (closing ?? srv.close());
    }
  });

  test('shutdown: a piece not yet started is refused by the stopping runtime; the session closes 1001', async () => {
    const srv = await startServer({ models: [tts('slow', { run_ms: '300' })] });
    let closing: Promise<void> | undefined;
    try {
      const c = await openSpeak(srv.url, 'model=slow&sample_rate=16000');
      c.speak('Slow. Second.');
      c.send({ type: 'Flush' });
      await waitUntil('the first run started', () => srv.fixture.record.of('slow', 'run-start').length === 1);
      closing = srv.close();
      const closed = await c.closed;
      assert.equal(closed.code, 1001, framesOf(c.frames));
      assert.equal(c.audio().length, toneBytes('Slow.'), 'the piece in progress was finished');
      const last = c.frames.at(-1)!;
      assert.ok('json' in last && last.json.code === 'SESSION_ENDING', framesOf(c.frames));
    } finally {
      await (closing ?? srv.close());
    }
  });

  test('a client that stops reading is let go at live_ingest.send_timeout_ms, its run cancelled', async () => {
    await withServer(
      {
        models: [tts('long', { chunks: '100', repeat: '1000' })],
        live_ingest: { send_timeout_ms: 300 },
      },
      async (srv) => {
        const c = await openSpeak(srv.url, 'model=long&sample_rate=48000');
        await c.next('Metadata');
        c.ws.pause();
        c.speak('A text whose audio is far longer than any socket buffer.');
        c.send({ type: 'Flush' });
        await waitUntil('the run started', () => srv.fixture.record.of('long', 'run-start').length === 1);
        await waitUntil('the run ended', () => srv.fixture.record.of('long', 'run-end').length === 1, 10_000);
        assert.equal((srv.fixture.record.of('long', 'run-end')[0] as { outcome: string }).outcome, 'aborted');
        assert.equal((await modelStatus(srv.url, 'long')).active_slots ?? 0, 0);
        c.ws.resume();
        assert.equal((await c.closed).code, 1006, 'the socket was cut, not closed behind the unread audio');
      },
    );
  });

  test('a client that sends bad messages and reads none of the Warnings is cut, not buffered for', async () => {
    await withServer({ models: [tts('tone')] }, async (srv) => {
      const c = await openSpeak(srv.url, 'model=tone');
      await c.next('Metadata');
      c.ws.pause();
      // Each answered by a Warning of some 300 bytes: far more than the socket buffers hold.
      for (let i = 0; i < 100_000; i++) c.ws.send('x');
      const ended = async () =>
        (await get(srv.url, '/metrics')).body
          .toString()
          .includes('voxd_sessions_ended_total{protocol="deepgram_speak",reason="send_timeout"} 1');
      await waitUntil('the server let the session go for not reading', ended, 20_000);
      c.ws.resume();
      assert.equal((await c.closed).code, 1006);
    });
  });

  test('unspoken text is held on the byte budget: past it a Warning, and all of it given back once spoken', async () => {
    await withServer({ models: [tts('tone')], max_inflight_body_bytes: 4096 }, async (srv) => {
      const c = await openSpeak(srv.url, 'model=tone&sample_rate=16000');
      try {
        c.speak('x'.repeat(3000));
        const { message } = await c.next('Warning');
        assert.equal(message.code, 'BUFFER_FULL');
        assert.match(message.description, /max_inflight_body_bytes=4096/);
        c.speak('Hello there, my good friend. And');
        const held = async () =>
          /voxd_client_bytes_held (\d+)/.exec((await get(srv.url, '/metrics')).body.toString())?.[1];
        c.send({ type: 'Flush' });
        const { at } = await c.next('Flushed');
        assert.equal(
          c.audio(0, at).length,
          toneBytes('Hello there, my good friend.') + toneBytes('And'),
          'the refused text is not spoken',
        );
        assert.equal(await held(), '0');
      } finally {
        c.ws.close();
      }
    });
  });

  test('deepgram_max_session_ms: the session ends at its longest life, its synthesis cancelled', async () => {
    await withServer(
      { models: [tts('hang', { hang: 'true' })], deepgram_max_session_ms: 300 },
      async (srv) => {
        const c = await openSpeak(srv.url, 'model=hang');
        c.speak('This never ends.');
        c.send({ type: 'Flush' });
        assert.deepEqual(await c.closed, { code: 1011, reason: 'session too long' });
        const last = c.frames.at(-1)!;
        assert.ok('json' in last && /deepgram_max_session_ms \(300 ms\)/.test(last.json.description));
        await waitUntil(
          'the slot is free',
          async () => ((await modelStatus(srv.url, 'hang')).active_slots ?? 0) === 0,
        );
        assert.equal((srv.fixture.record.of('hang', 'run-end')[0] as { outcome: string }).outcome, 'aborted');
      },
    );
  });
});
