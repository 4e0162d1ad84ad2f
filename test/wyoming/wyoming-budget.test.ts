/**
 * What a Wyoming client can make the server hold (probe 2026-12, F3 and F9): a connection refused
 * over max_connections that sent a byte is reaped (its descriptor given back, the shutdown not held
 * by it), and an utterance is held at the model's rate, mono, whatever its format, inside the
 * server-wide byte budget: past it the exchange ends with `body_budget`. Descriptors are counted in
 * /proc/self/fd (the server runs in this process), memory as its resident size after a collection.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { connect } from 'node:net';
import { test } from 'node:test';
import { runInNewContext } from 'node:vm';
import { wavHeader } from '../../src/audio/wav-encode.js';
import { bodyBudgetOf } from '../../src/http/transport/body-budget.js';
import { lazyModel } from '../helpers/models.js';
import { fixtureModel, fliteSpeech, transcribe, waitUntil, withServer } from '../helpers/voxd.js';
import { frameOf, WyomingClient } from '../helpers/wyoming.js';

const descriptors = () => readdirSync('/proc/self/fd').length;
// The server's memory release exposed gc() (src/util/release-memory.ts); a collection first means
// the resident size counts what is held, not garbage not yet collected.
const gc = runInNewContext('gc') as () => void;
const resident = () => {
  gc();
  return process.memoryUsage().rss;
};
const MiB = 1024 * 1024;

test('[F3] 200 connections refused over max_connections, each having sent a byte, give their descriptors back; the shutdown does not wait for them', async () => {
  await withServer(
    {
      wyoming_port: 0,
      max_connections: 1,
      shutdown_timeout_ms: 20_000,
      models: [fixtureModel('asr', { task: 'asr' })],
    },
    async (s) => {
      const port = s.voxd.wyoming!.port;
      const holder = await WyomingClient.open(port);
      holder.send('describe');
      await holder.next('info');
      const before = descriptors();
      for (let i = 0; i < 200; i++) {
        const socket = connect(port, '127.0.0.1');
        socket.on('error', () => undefined);
        socket.resume();
        await new Promise((resolve) => socket.once('connect', resolve));
        socket.write('{"type": "describe"}\n');
        // The refusal is read and the client's side closes (no half-open client).
        await new Promise((resolve) => socket.once('close', resolve));
      }
      await waitUntil('every refused descriptor is given back', () => descriptors() <= before, 3000);
      const started = Date.now();
      await s.voxd.close();
      assert.ok(Date.now() - started < 5000, `the shutdown took ${Date.now() - started} ms`);
      await holder.closed;
    },
  );
});

test('[F9] a 384 kHz, 8-channel, 8-bit utterance is held at 16 kHz mono: the byte budget in use and the resident size stay small', async () => {
  await withServer(
    {
      wyoming_port: 0,
      busy_timeout_ms: 0,
      models: [lazyModel('flite', 'flite_tts', 'tts'), lazyModel('pocketsphinx', 'pocketsphinx_asr', 'asr')],
    },
    { parallel: true },
    async (s) => {
      const pcm = await fliteSpeech(s.url, 'Please call me tomorrow morning.', 16000);
      const warmed = await transcribe(
        s.url,
        'pocketsphinx',
        Buffer.concat([wavHeader(16000, 1, pcm.length), pcm]),
      );
      assert.equal(warmed.status, 200);
      const budget = bodyBudgetOf(s.voxd.server)!;
      const wide = { rate: 384_000, width: 1, channels: 8 };
      // 4 MiB (the largest payload) of 8-bit silence: 1.37 s. One frame written again and again,
      // so the client's own memory stays the same.
      const frame = frameOf('audio-chunk', wide, Buffer.alloc(4 * MiB, 128));
      const c = await WyomingClient.open(s.voxd.wyoming!.port);
      try {
        const rss = resident();
        c.send('transcribe', { name: 'pocketsphinx' });
        c.send('audio-start', wide);
        let most = 0;
        // 20 chunks, 27 s of audio: 80 MiB sent, 335 MB as Float32 of its own shape.
        for (let i = 0; i < 20; i++) {
          if (!c.socket.write(frame)) await new Promise((resolve) => c.socket.once('drain', resolve));
          most = Math.max(most, budget.inUse);
        }
        // Events are answered in order: the pong says every chunk was taken.
        c.send('ping');
        await c.next('pong', 0, 30_000);
        most = Math.max(most, budget.inUse);
        const held = budget.inUse;
        const grown = resident() - rss;
        // At most 27.3 s at 16 kHz as Float32 (none when the pace made it live: then the engine has it).
        assert.ok(held < 2 * MiB, `the utterance holds ${held} bytes of the budget`);
        // The chunks waiting to be converted: the inbox pauses the socket past 8 MiB of them.
        assert.ok(most <= 16 * MiB, `at most ${most} bytes of the budget in use`);
        assert.ok(grown < 64 * MiB, `the resident size grew ${Math.round(grown / MiB)} MiB`);
        c.send('audio-stop');
        await c.next('transcript', 0, 60_000);
        await waitUntil('the budget is given back', () => budget.inUse === 0);
      } finally {
        await c.close();
      }
    },
  );
});

test('[F9] an utterance past max_inflight_body_bytes ends with error body_budget, which ends its connection; the budget is given back', async () => {
  await withServer(
    { wyoming_port: 0, max_inflight_body_bytes: MiB, models: [fixtureModel('asr', { task: 'asr' })] },
    async (s) => {
      const budget = bodyBudgetOf(s.voxd.server)!;
      const format = { rate: 16000, width: 2, channels: 1 };
      const c = await WyomingClient.open(s.voxd.wyoming!.port);
      try {
        c.send('transcribe', { name: 'asr' });
        c.send('audio-start', format);
        // One second a chunk, held as 64,000 bytes of Float32: the 17th passes 1 MiB.
        for (let i = 0; i < 20; i++) c.send('audio-chunk', format, Buffer.alloc(32_000));
        const error = await c.refusal();
        assert.equal(error.data.code, 'body_budget');
        assert.match(error.data.text, /Wyoming utterance.*max_inflight_body_bytes=1048576/);
        await waitUntil('the budget is given back', () => budget.inUse === 0);
        assert.equal(c.types().includes('transcript'), false);
      } finally {
        await c.close();
      }
    },
  );
});
