/**
 * Every streaming protocol at once on one byte budget (issue 38): realtime sessions appending
 * audio, Wyoming utterances streaming, bridge frames waiting behind a running request, Deepgram's
 * `/v1/listen` sockets sending a minute of audio a frame and `/v1/speak` sockets sending 4 MiB
 * `Speak` messages (issue 41), all on a server with max_inflight_body_bytes at 64 MiB. What they hold together never passes the budget
 * (every take is checked as it happens), the resident size grows by at most the budget and 100 MB,
 * each client past the budget gets its protocol's documented refusal (`body_budget`), nothing
 * crashes, and once they leave the budget is empty and no slot is held. The server runs in this
 * process; the clients reuse one buffer per message and send it unmasked, so their own memory
 * barely counts.
 */
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { WebSocket } from 'ws';
import { bodyBudgetOf } from '../../src/http/transport/body-budget.js';
import { paddedJson, watchHighest } from '../helpers/budget.js';
import { lazyModel } from '../helpers/models.js';
import { fixtureModel, tempDir, waitUntil, whenRuntime, withServer } from '../helpers/voxd.js';
import { Messages } from '../helpers/websocket.js';
import { frameOf, WyomingClient } from '../helpers/wyoming.js';

const MIB = 1024 * 1024;
const LIMIT = 64 * MIB;
const rssKb = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))![1]);
const peakKb = () => Number(/VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))![1]);
const resetPeak = () => writeFileSync('/proc/self/clear_refs', '5');

interface Client {
  ws: WebSocket;
  messages: Messages;
  closed: Promise<unknown>;
}

/** A WebSocket whose frames go out unmasked: ws then writes the caller's buffer, not a masked copy. */
async function open(url: string): Promise<Client> {
  const ws = new WebSocket(url.replace(/^http/, 'ws'), { generateMask: () => {} });
  const messages = new Messages();
  ws.on('message', (data) => messages.push(JSON.parse(data.toString())));
  const closed = new Promise((resolve) => ws.on('close', resolve));
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  return { ws, messages, closed };
}

/** Sends `bytes` as one text frame (a binary one with `binary`); resolves once it is written out. */
const sendText = (c: Client, bytes: Buffer, binary = false) =>
  new Promise<void>((resolve, reject) => {
    // A socket the server closed (a Deepgram refusal ends the session) takes nothing more.
    if (c.ws.readyState !== WebSocket.OPEN) return resolve();
    c.ws.send(bytes, { binary }, (err) =>
      err && c.ws.readyState === WebSocket.OPEN ? reject(err) : resolve(),
    );
  });

/** Where a Deepgram socket's close says the budget refused it (`NET-0000 <message>`), its code. */
const closeCode = (code: number, reason: string) =>
  code === 1011 && /bytes of client data/.test(reason) ? 'body_budget' : `close ${code} ${reason}`;

test("realtime, Wyoming, bridge and Deepgram's sessions together stay inside max_inflight_body_bytes: refused past it, resident size bounded, all given back", async () => {
  const dir = tempDir('voxd-combined-gate-');
  const gatePath = join(dir, 'gate');
  const openGate = () => writeFileSync(gatePath, '');
  try {
    await withServer(
      {
        frontend_listener: 'websocket',
        wyoming_port: 0,
        max_inflight_body_bytes: LIMIT,
        models: [
          fixtureModel('slow', { task: 'tts', default_request_options: { run_gate: gatePath } }),
          fixtureModel('asr', { task: 'asr' }),
          // /v1/listen finds utterances with the server's VAD.
          lazyModel('silero-vad', 'silero_vad', 'vad'),
        ],
      },
      { beforeClose: [openGate] },
      async (s) => {
        const budget = bodyBudgetOf(s.voxd.server)!;
        const watch = watchHighest(budget);
        // Bridge: three sockets, each with a request of the gated model running or waiting, so
        // that the frames they are sent next wait too.
        const bridges: Client[] = [];
        for (let i = 0; i < 3; i++) bridges.push(await open(`${s.url}/v1/audio/speech`));
        for (const [i, c] of bridges.entries())
          await sendText(c, Buffer.from(JSON.stringify({ id: `held${i}`, model: 'slow', input: 'held' })));
        await whenRuntime(s.voxd.runtime, 'the gated requests run or wait', () => {
          const snapshot = s.voxd.runtime.get('slow').scheduler.snapshot();
          return snapshot.activeRequests + snapshot.queuedRequests === 3;
        });
        const realtime = [
          await open(`${s.url}/v1/realtime?model=asr`),
          await open(`${s.url}/v1/realtime?model=asr`),
        ];
        for (const c of realtime) await c.messages.next('session.created');
        const wyoming = [
          await WyomingClient.open(s.voxd.wyoming!.port),
          await WyomingClient.open(s.voxd.wyoming!.port),
        ];
        const deepgram = { listen: [] as Client[], speak: [] as Client[] };
        const closes = new Map<Client, Promise<{ code: number; reason: string }>>();
        for (const kind of ['listen', 'speak'] as const)
          for (let i = 0; i < 2; i++) {
            const c = await open(
              `${s.url}/v1/${kind}?model=${kind === 'listen' ? 'asr' : 'slow'}&encoding=linear16&sample_rate=16000`,
            );
            closes.set(
              c,
              new Promise((resolve) =>
                c.ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
              ),
            );
            deepgram[kind].push(c);
          }
        await Promise.all(deepgram.speak.map((c) => c.messages.next('Metadata')));

        // 38 s of 24 kHz PCM16 an append (2.4 MiB as base64): kept at 16 kHz, 2.4 MB of samples.
        // Three rounds stay under a turn's 120 s, so a realtime refusal can only be the budget's
        // (with 100 s appends the second round was refused audio_too_long whenever its message
        // arrived while the budget still had room).
        const append = Buffer.from(
          JSON.stringify({
            type: 'input_audio_buffer.append',
            audio: Buffer.alloc(38 * 48_000).toString('base64'),
          }),
        );
        const format = { rate: 16_000, width: 2, channels: 1 };
        // 13 s of 16 kHz PCM16 a chunk (416 KB): held as 832 KB of samples. Nine chunks stay under an
        // utterance's 120 s (UTTERANCE_SECONDS), so a Wyoming refusal can only be the budget's (with
        // 30 s chunks the fifth passed the limit whenever the budget had room just then).
        const chunk = frameOf('audio-chunk', format, Buffer.alloc(13 * 32_000));
        const frame = paddedJson('{"id":"big","model":"slow","input":"hi","pad":["', 8 * MIB - 64);
        // A minute of 16 kHz PCM16 a listen frame (1.9 MB); a 4 MiB Speak message.
        const minute = Buffer.alloc(60 * 32_000);
        const speakText = Buffer.from(JSON.stringify({ type: 'Speak', text: 'a'.repeat(4 * MIB) }));

        const base = rssKb();
        resetPeak();
        for (const c of wyoming) {
          c.send('transcribe', { name: 'asr' });
          c.send('audio-start', format);
        }
        // Each protocol in turn, three rounds: together far past the budget.
        for (let round = 0; round < 3; round++) {
          for (const c of bridges) await sendText(c, frame);
          for (const c of realtime) await sendText(c, append);
          for (const c of deepgram.listen) await sendText(c, minute, true);
          for (const c of deepgram.speak) await sendText(c, speakText);
          // A Wyoming connection refused past the budget is ended by voxd: nothing more is sent on it.
          for (const c of wyoming)
            for (let n = 0; n < 3 && c.socket.writable; n++)
              if (!c.socket.write(chunk))
                await new Promise((resolve) => {
                  c.socket.once('drain', resolve);
                  c.socket.once('close', resolve);
                });
        }
        // Every message is answered or held: a ping on each Wyoming connection and a clear after the
        // appends say what came before them was taken.
        for (const c of wyoming) {
          const seen = c.events.length;
          if (c.socket.writable) c.send('ping');
          await c.readUntil(['pong'], seen, 60_000);
        }
        for (const c of realtime) {
          await sendText(c, Buffer.from('{"type":"input_audio_buffer.clear"}'));
          await c.messages.next('input_audio_buffer.cleared', 0, 60_000);
        }
        // A Finalize is answered once the audio before it was heard, a Flush once the text before it
        // was taken (nothing to speak: at once); a socket the budget refused is closed instead.
        const answered = (c: Client, message: string, type: string) =>
          Promise.race([
            sendText(c, Buffer.from(message)).then(() => c.messages.next(type, 0, 60_000)),
            closes.get(c),
          ]);
        for (const c of deepgram.listen) await answered(c, '{"type":"Finalize"}', 'Results');
        for (const c of deepgram.speak) await answered(c, '{"type":"Flush"}', 'Flushed');
        const refusedBridge = () =>
          bridges.flatMap((c) => c.messages.all.filter((m) => m.type === 'response' && m.status === 503));
        await waitUntil(
          'the bridge frames past the budget are answered',
          () => refusedBridge().length > 0,
          30_000,
        );
        const grown = (peakKb() - base) * 1024;
        process.stdout.write(
          `# combined: budget highest ${watch.highest} bytes; resident size peak +${(grown / 1e6).toFixed(0)} MB\n`,
        );
        assert.ok(watch.highest <= LIMIT, `the budget held ${watch.highest} bytes`);
        assert.ok(
          grown < LIMIT + 100e6,
          `the resident size peaked ${(grown / 1e6).toFixed(0)} MB above its start`,
        );

        // Each refusal is its protocol's documented one: the budget's, or a bridge socket's own
        // backlog of two frames (websocket-bridge.md).
        const codes: string[] = [];
        for (const r of refusedBridge()) {
          const code = JSON.parse(r.body).error.code;
          assert.ok(['body_budget', 'bridge_backlog'].includes(code), code);
          assert.equal(r.headers['Retry-After'], '1');
          codes.push(code);
        }
        for (const c of realtime)
          for (const e of c.messages.all.filter((m) => m.type === 'error')) codes.push(e.error.code);
        // A listen socket the budget refused is closed 1011 with the budget's message (cut to a close
        // frame's 123 bytes), as Deepgram closes on an error; a speak socket is told with a Warning
        // and goes on.
        for (const c of deepgram.listen)
          if (c.ws.readyState !== WebSocket.OPEN) {
            const { code, reason } = (await closes.get(c))!;
            codes.push(closeCode(code, reason));
          }
        // TEXT_TOO_LONG is the text limit's answer to 4 MiB without a sentence end, not a refusal.
        for (const c of deepgram.speak)
          for (const w of c.messages.all.filter((m) => m.type === 'Warning' && m.code !== 'TEXT_TOO_LONG'))
            codes.push(
              /max_inflight_body_bytes/.test(w.description) ? 'body_budget' : `${w.code} ${w.description}`,
            );
        for (const c of wyoming) {
          // A refusal is the connection's last event.
          const errors = c.events.filter((m) => m.type === 'error');
          assert.ok(errors.length <= 1, JSON.stringify(errors));
          if (errors[0]) {
            codes.push(errors[0].data.code);
            assert.equal(c.events.at(-1), errors[0]);
            await c.closed;
          }
        }
        assert.ok(
          codes.every((code) => code === 'body_budget' || code === 'bridge_backlog'),
          codes.join(', '),
        );
        assert.ok(codes.includes('body_budget'), `the budget refused some: ${codes.join(', ')}`);
        process.stdout.write(`# combined: refusals ${codes.join(', ')}\n`);

        // Everyone leaves: the budget empties and no slot stays held.
        openGate();
        const sockets = [...bridges, ...realtime, ...deepgram.listen, ...deepgram.speak];
        for (const c of sockets) c.ws.close();
        for (const c of wyoming) await c.close();
        await Promise.all(sockets.map((c) => c.closed));
        await waitUntil('the budget is given back', () => budget.inUse === 0, 30_000);
        await whenRuntime(s.voxd.runtime, 'no slot is held', () =>
          ['slow', 'asr'].every((id) => s.voxd.runtime.get(id).scheduler.snapshot().activeRequests === 0),
        );
      },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
