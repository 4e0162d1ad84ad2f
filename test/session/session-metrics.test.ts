/**
 * The shared readings every front end draws on are in /metrics: the byte budget's bytes held and
 * the connection count (HTTP and Wyoming together); a session's end is counted by protocol and
 * reason, Deepgram's two sockets' too (their open sessions gauged, their exchanges counted).
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { test } from 'node:test';
import { VoxdError } from '../../src/errors.js';
import { Metrics } from '../../src/observability/metrics.js';
import { sessionHost } from '../../src/session/session-host.js';
import { SessionShell } from '../../src/session/session-shell.js';
import { MemoryRelease } from '../../src/util/release-memory.js';
import { openDeepgram } from '../helpers/deepgram-socket.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { lazyModel } from '../helpers/models.js';
import { fixtureModel, startServer, waitUntil, withServer } from '../helpers/voxd.js';

const reading = (text: string, series: string) =>
  Number(
    text
      .split('\n')
      .find((line) => line.startsWith(`${series} `))
      ?.split(' ')[1],
  );

test('voxd_sessions_ended_total counts a session end by protocol and reason', async () => {
  const clock = new ManualClock();
  const metrics = new Metrics('test', () => []);
  const host = sessionHost(
    { max_inflight_body_bytes: 0, max_connections: 0 },
    clock,
    new MemoryRelease(clock, () => {}),
    metrics,
  );
  const open = (protocol: 'realtime' | 'wyoming') =>
    new SessionShell(host, {
      what: 'session',
      protocol,
      inboxEvents: 4,
      idleMs: 0,
      idleSetting: 'x',
      pause() {},
      resume() {},
      expire() {},
    });
  open('wyoming').leave(new VoxdError('E_SESSION_IDLE', 'quiet'));
  const realtime = open('realtime');
  realtime.leave(new VoxdError('E_CLIENT_GONE', 'left'));
  realtime.leave(new VoxdError('E_CLIENT_GONE', 'left again')); // counted once
  const text = await metrics.registry.metrics();
  assert.equal(reading(text, 'voxd_sessions_ended_total{protocol="wyoming",reason="idle"}'), 1);
  assert.equal(reading(text, 'voxd_sessions_ended_total{protocol="realtime",reason="client_gone"}'), 1);
});

test('/metrics: client connections over HTTP and Wyoming, and the client bytes held', async () => {
  const s = await startServer({ wyoming_port: 0, models: [fixtureModel('m')] });
  const scrape = async () => (await fetch(`${s.url}/metrics`)).text();
  // fetch keeps its connection alive: the count before the Wyoming client is the HTTP one.
  const before = reading(await scrape(), 'voxd_connections');
  assert.ok(before >= 1);
  const wyoming = connect(s.voxd.wyoming!.port, '127.0.0.1');
  try {
    await new Promise((resolve) => wyoming.once('connect', resolve));
    wyoming.write('{"type":"ping"}\n');
    await new Promise((resolve) => wyoming.once('data', resolve)); // accepted and served
    const text = await scrape();
    assert.equal(reading(text, 'voxd_connections'), before + 1, 'the Wyoming connection counts with HTTP');
    assert.equal(reading(text, 'voxd_client_bytes_held'), 0);
  } finally {
    wyoming.destroy();
    await s.close();
  }
});

test("Deepgram's sockets in /metrics: sessions open by protocol, a speak segment's exchange, each end by its reason", async () => {
  await withServer(
    {
      deepgram_idle_timeout_ms: 200,
      models: [
        fixtureModel('asr'),
        fixtureModel('tts', { task: 'tts' }),
        lazyModel('silero-vad', 'silero_vad', 'vad'),
      ],
    },
    async (s) => {
      const scrape = async () => (await fetch(`${s.url}/metrics`)).text();
      const open = (protocol: string) => `voxd_deepgram_sessions{protocol="${protocol}"}`;
      const speak = await openDeepgram(`${s.url}/v1/speak?model=tts`);
      const listen = await openDeepgram(`${s.url}/v1/listen?model=asr`);
      await waitUntil('both sessions are counted', async () => {
        const text = await scrape();
        return reading(text, open('deepgram_speak')) === 1 && reading(text, open('deepgram_listen')) === 1;
      });
      speak.send({ type: 'Speak', text: 'Hello there.' });
      speak.send({ type: 'Flush' });
      await speak.messages.next('Flushed');
      speak.ws.close();
      await speak.closed;
      // The listen client sends nothing: Deepgram's idle timeout (NET-0001) ends it.
      const { code, reason } = await listen.closed;
      assert.equal(code, 1011);
      assert.match(reason, /^NET-0001/);
      await waitUntil('both are counted out, each end by its reason', async () => {
        const text = await scrape();
        return (
          reading(text, open('deepgram_speak')) === 0 &&
          reading(text, open('deepgram_listen')) === 0 &&
          reading(text, 'voxd_sessions_ended_total{protocol="deepgram_speak",reason="client_gone"}') === 1 &&
          reading(text, 'voxd_sessions_ended_total{protocol="deepgram_listen",reason="idle"}') === 1
        );
      });
      const text = await scrape();
      assert.equal(
        reading(
          text,
          'voxd_exchanges_total{protocol="deepgram_speak",kind="tts",model="tts",outcome="completed"}',
        ),
        1,
      );
    },
  );
});
