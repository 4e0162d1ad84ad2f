/**
 * Server-VAD turns as real clients see them (issue 39, item 5): LiveKit Agents' realtime STT
 * (@livekit/agents-plugin-openai 1.9.0, its defaults: prefix 600 ms, silence 350 ms) and a raw
 * realtime socket sending the session.update the openai SDK sends (OpenAI's defaults: 300/500), fed
 * the same 24 kHz speech with short pauses. The plugin hides the server's events, so it dials voxd
 * through a recording relay (`startTap`). Shared by test/http/realtime/livekit-turns.test.ts and
 * scripts/bench-vad-turns.mjs (the 20-run measurement).
 */

import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { initializeLogger } from '@livekit/agents';
import * as openai from '@livekit/agents-plugin-openai';
import { AudioFrame } from '@livekit/rtc-node';
import { WebSocket, WebSocketServer } from 'ws';
import { resample } from '../../src/audio/convert.js';
import { floats } from '../../src/audio/pcm16-audio.js';
import { librivoxSamples } from './librivox.js';
import { speechBounds } from './samples.js';
import { type Message, Messages, openSocket } from './websocket.js';

export const RATE = 24000;

/** [prefix_padding_ms, silence_duration_ms] of each client's defaults. */
export const LIVEKIT_DEFAULTS = { prefix: 600, silence: 350 } as const;
export const OPENAI_DEFAULTS = { prefix: 300, silence: 500 } as const;

export interface Clip {
  name: string;
  /** PCM16 at 24 kHz. */
  pcm: Int16Array;
  /** Where the last speech ends, in ms: the last turn must stop after it. */
  lastSpeechMs: number;
}

const toPcm16 = (samples: Float32Array) =>
  Int16Array.from(samples, (v) => Math.max(-32768, Math.min(32767, Math.round(v * 32768))));

/** `parts` with `pauseMs` of silence between them, 500 ms before and `tailMs` after. */
function joined(name: string, parts: Float32Array[], pauseMs: number, tailMs = 2000): Clip {
  const gap = new Float32Array(Math.round((pauseMs * RATE) / 1000));
  const lead = new Float32Array(RATE / 2);
  const pieces = [lead, ...parts.flatMap((p, i) => (i === 0 ? [p] : [gap, p]))];
  const speechEnd = pieces.reduce((n, p) => n + p.length, 0);
  pieces.push(new Float32Array(Math.round((tailMs * RATE) / 1000)));
  const out = new Float32Array(pieces.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of pieces) {
    out.set(p, at);
    at += p.length;
  }
  const last = parts.at(-1)!;
  const [, end] = speechBounds(last);
  return { name, pcm: toPcm16(out), lastSpeechMs: ((speechEnd - last.length + end) / RATE) * 1000 };
}

/** LibriVox clip 0880 ("he was not an ill disposed young man", 3.0 s) at 24 kHz: its own pauses. */
export function libri0880(): Clip {
  const samples = floats(
    resample({ samples: librivoxSamples('0880'), sampleRate: 16000, channels: 1 }, RATE),
  );
  return joined('libri 0880', [samples], 0);
}

/** flite's slt saying each sentence, trimmed to its speech, joined by `pauseMs` of silence. */
export async function fliteSentences(base: string, sentences: string[], pauseMs: number): Promise<Clip> {
  const parts: Float32Array[] = [];
  for (const input of sentences) {
    const res = await fetch(`${base}/v1/audio/speech`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'flite',
        voice: 'slt',
        input,
        response_format: 'pcm',
        sample_rate: RATE,
      }),
    });
    if (res.status !== 200) throw new Error(`flite: ${res.status} ${await res.text()}`);
    const pcm = Buffer.from(await res.arrayBuffer());
    const samples = Float32Array.from(
      new Int16Array(pcm.buffer, pcm.byteOffset, pcm.length / 2),
      (v) => v / 32768,
    );
    const [a, b] = speechBounds(samples);
    parts.push(samples.subarray(a, b));
  }
  return joined(`flite ${sentences.length} sentences, ${pauseMs} ms pauses`, parts, pauseMs);
}

/** A relay in front of voxd that records every event voxd sends on it, in order. */
export interface Tap {
  /** The relay's base URL, for a client's `baseURL`. */
  url: string;
  messages: Messages;
  close(): Promise<void>;
}

export async function startTap(target: string): Promise<Tap> {
  const messages = new Messages();
  const server = createServer((_req, res) => res.writeHead(404).end());
  const wss = new WebSocketServer({ server });
  wss.on('connection', (client, req) => {
    const upstream = new WebSocket(`${target.replace(/^http/, 'ws')}${req.url}`, {
      headers: { authorization: req.headers.authorization ?? '' },
    });
    // The client speaks at once (its session.update); hold that until voxd's socket opens.
    const early: [Buffer, boolean][] = [];
    client.on('message', (data: Buffer, binary) => {
      if (upstream.readyState === WebSocket.OPEN) upstream.send(data, { binary });
      else early.push([data, binary]);
    });
    upstream.on('open', () => {
      for (const [data, binary] of early.splice(0)) upstream.send(data, { binary });
    });
    upstream.on('message', (data: Buffer, binary) => {
      messages.push(JSON.parse(data.toString()));
      client.send(data, { binary });
    });
    const end = () => {
      client.close();
      upstream.close();
    };
    client.on('close', end);
    upstream.on('close', end);
    client.on('error', end);
    upstream.on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    messages,
    close: async () => {
      for (const socket of wss.clients) socket.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface Turn {
  item: string;
  /** speech_started's audio_start_ms: where the turn's audio begins, its padding included. */
  start: number;
  /** speech_stopped's audio_end_ms; the turn's audio runs on through the silence window. */
  end: number;
  transcript: string;
}

/**
 * Waits until voxd has ended the clip's last speech (a speech_stopped at or after it, less
 * `slackMs`: silero ends speech a little before the last quiet samples) and has transcribed every
 * turn it committed; then the turns, in order.
 */
export async function turnsOf(
  messages: Messages,
  clip: Clip,
  timeoutMs = 60_000,
  slackMs = 600,
): Promise<Turn[]> {
  await messages.next(
    (m: Message) =>
      m.type === 'input_audio_buffer.speech_stopped' && m.audio_end_ms >= clip.lastSpeechMs - slackMs,
    0,
    timeoutMs,
  );
  const started = messages.all.filter((m) => m.type === 'input_audio_buffer.speech_started');
  const turns: Turn[] = [];
  for (const s of started) {
    const stopped = await messages.next(
      (m: Message) => m.type === 'input_audio_buffer.speech_stopped' && m.item_id === s.item_id,
      0,
      timeoutMs,
    );
    const completed = await messages.next(
      (m: Message) =>
        m.type === 'conversation.item.input_audio_transcription.completed' && m.item_id === s.item_id,
      0,
      timeoutMs,
    );
    turns.push({
      item: s.item_id,
      start: s.audio_start_ms,
      end: stopped.audio_end_ms,
      transcript: completed.transcript,
    });
  }
  const errors = messages.all.filter((m) => m.type === 'error');
  if (errors.length > 0) throw new Error(`error events: ${JSON.stringify(errors)}`);
  return turns;
}

/** Each pair of turns that share audio: the next starts before the last one's silence window ended. */
export function overlapsOf(turns: Turn[], silenceMs: number): string[] {
  const found: string[] = [];
  for (let n = 1; n < turns.length; n++) {
    const endOfLast = turns[n - 1]!.end + silenceMs;
    if (turns[n]!.start < endOfLast)
      found.push(
        `turn ${n + 1} starts at ${turns[n]!.start} ms, inside turn ${n}'s audio (to ${endOfLast} ms)`,
      );
  }
  return found;
}

const wordsOf = (text: string) => text.toLowerCase().match(/[a-z']+/g) ?? [];

/** Each boundary where a turn begins with the word the one before it ended with. */
export function repeatsOf(turns: Turn[]): string[] {
  const found: string[] = [];
  for (let n = 1; n < turns.length; n++) {
    const last = wordsOf(turns[n - 1]!.transcript).at(-1);
    if (last !== undefined && wordsOf(turns[n]!.transcript)[0] === last)
      found.push(`"${turns[n - 1]!.transcript}" / "${turns[n]!.transcript}"`);
  }
  return found;
}

/** 10 ms pieces of the clip, at real time when `paced`, else as fast as the socket takes them. */
async function* pieces(clip: Clip, paced: boolean): AsyncGenerator<Int16Array> {
  const step = RATE / 100;
  const began = performance.now();
  for (let at = 0, n = 0; at < clip.pcm.length; at += step, n++) {
    if (paced) {
      const due = began + n * 10 - performance.now();
      if (due > 0) await new Promise((resolve) => setTimeout(resolve, due));
    } else if (n % 50 === 0) {
      // Let the sockets breathe: the relay and voxd run on this thread in a test.
      await new Promise((resolve) => setImmediate(resolve));
    }
    yield clip.pcm.subarray(at, at + step);
  }
}

let loggerReady = false;

/** LiveKit's realtime STT with its defaults, through `tap`: the clip's turns as voxd reported them. */
export async function liveKitTurns(tap: Tap, clip: Clip, paced: boolean): Promise<Turn[]> {
  if (!loggerReady) initializeLogger({ pretty: false, level: 'warn' });
  loggerReady = true;
  const stt = new openai.STT({ baseURL: `${tap.url}/v1`, apiKey: 'sk-none', model: 'gpt-4o-transcribe' });
  const stream = stt.stream();
  // The plugin's events must be read, or its queue holds them; the turns are read from the tap.
  const drained = (async () => {
    for await (const _ of stream);
  })();
  try {
    for await (const piece of pieces(clip, paced))
      stream.pushFrame(new AudioFrame(Int16Array.from(piece), RATE, 1, piece.length));
    return await turnsOf(tap.messages, clip);
  } finally {
    stream.endInput();
    stream.close();
    await stt.close();
    await drained.catch(() => undefined);
  }
}

/** A raw realtime socket with the openai SDK's GA session.update and OpenAI's VAD defaults. */
export async function rawTurns(base: string, clip: Clip, paced: boolean): Promise<Turn[]> {
  const { ws, messages, send } = await openSocket(`${base}/v1/realtime?intent=transcription`);
  try {
    send({
      type: 'session.update',
      session: {
        type: 'transcription',
        audio: {
          input: {
            format: { type: 'audio/pcm', rate: RATE },
            transcription: { model: 'gpt-4o-transcribe', language: 'en' },
            turn_detection: {
              type: 'server_vad',
              threshold: 0.5,
              prefix_padding_ms: OPENAI_DEFAULTS.prefix,
              silence_duration_ms: OPENAI_DEFAULTS.silence,
            },
          },
        },
      },
    });
    await messages.next('session.updated', 0, 10_000);
    // 40 ms appends, as the report's SDK program sent them.
    let batch: Int16Array[] = [];
    for await (const piece of pieces(clip, paced)) {
      batch.push(piece);
      if (batch.length < 4) continue;
      const pcm = Buffer.concat(batch.map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength)));
      send({ type: 'input_audio_buffer.append', audio: pcm.toString('base64') });
      batch = [];
    }
    if (batch.length > 0) {
      const pcm = Buffer.concat(batch.map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength)));
      send({ type: 'input_audio_buffer.append', audio: pcm.toString('base64') });
    }
    return await turnsOf(messages, clip);
  } finally {
    ws.close();
  }
}
