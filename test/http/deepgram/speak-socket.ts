/**
 * A raw `ws` client of `/v1/speak` for the speak tests: every frame in arrival order (JSON messages
 * parsed, audio kept as bytes), waits for a message, and the audio between two points.
 */
import { WebSocket } from 'ws';

// biome-ignore lint/suspicious/noExplicitAny: messages are checked as plain JSON
export type SpeakMessage = any;

export type Frame = { json: SpeakMessage } | { audio: Buffer };

export interface SpeakClient {
  ws: WebSocket;
  frames: Frame[];
  send(message: unknown): void;
  speak(text: string): void;
  /** The first JSON message of `type` after frame `from`, waiting `ms` at most. */
  next(type: string, from?: number, ms?: number): Promise<{ message: SpeakMessage; at: number }>;
  /** The first frame at or after `from` that is audio, waiting `ms` at most. */
  firstAudio(from?: number, ms?: number): Promise<number>;
  /** Audio bytes of the frames in [from, to). */
  audio(from?: number, to?: number): Buffer;
  closed: Promise<{ code: number; reason: string }>;
}

export function openSpeak(url: string, query = '', headers?: Record<string, string>): Promise<SpeakClient> {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/v1/speak${query ? `?${query}` : ''}`, { headers });
  const frames: Frame[] = [];
  const waiters = new Set<() => void>();
  ws.on('message', (data: Buffer, binary) => {
    frames.push(binary ? { audio: data } : { json: JSON.parse(data.toString('utf8')) });
    for (const wake of [...waiters]) wake();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on('close', (code, reason) => {
      resolve({ code, reason: reason.toString() });
      for (const wake of [...waiters]) wake();
    }),
  );
  const wait = <T>(find: () => T | undefined, what: string, ms: number) =>
    new Promise<T>((resolve, reject) => {
      const look = () => {
        const found = find();
        if (found === undefined) return;
        waiters.delete(look);
        clearTimeout(timer);
        resolve(found);
      };
      const timer = setTimeout(() => {
        waiters.delete(look);
        reject(new Error(`no ${what}; got ${describe(frames)}`));
      }, ms);
      waiters.add(look);
      look();
    });
  const client: SpeakClient = {
    ws,
    frames,
    send: (message) => ws.send(typeof message === 'string' ? message : JSON.stringify(message)),
    speak: (text) => ws.send(JSON.stringify({ type: 'Speak', text })),
    next: (type, from = 0, ms = 10_000) =>
      wait(
        () => {
          for (let at = from; at < frames.length; at++) {
            const frame = frames[at]!;
            if ('json' in frame && frame.json.type === type) return { message: frame.json, at };
          }
          return undefined;
        },
        type,
        ms,
      ),
    firstAudio: (from = 0, ms = 10_000) =>
      wait(
        () => {
          for (let at = from; at < frames.length; at++) if ('audio' in frames[at]!) return at;
          return undefined;
        },
        'audio',
        ms,
      ),
    audio: (from = 0, to = frames.length) =>
      Buffer.concat(frames.slice(from, to).flatMap((frame) => ('audio' in frame ? [frame.audio] : []))),
    closed,
  };
  return new Promise((resolve, reject) => {
    ws.on('open', () => resolve(client));
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => {
        body += chunk;
      });
      res.on('end', () =>
        reject(Object.assign(new Error(`refused ${res.statusCode}`), { status: res.statusCode, body })),
      );
    });
    ws.on('error', reject);
  });
}

/** The frames in short: message types, and audio as its byte count. */
export function describe(frames: Frame[]): string {
  return frames.map((f) => ('json' in f ? f.json.type : `audio(${f.audio.length})`)).join(' ');
}
