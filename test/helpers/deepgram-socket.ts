/**
 * A raw `ws` client for Deepgram's sockets on voxd (`/v1/listen`, `/v1/speak`): JSON messages and
 * binary audio kept apart as they come (the speak socket answers with both), waits for the message
 * a test expects, and an upgrade's refusal read as the HTTP answer it is, its headers included.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { WebSocket } from 'ws';
import { type Message, Messages } from './websocket.js';

export interface DeepgramClient {
  ws: WebSocket;
  /** The JSON messages (Metadata, Results, Flushed, ...), in order. */
  messages: Messages;
  /** The binary messages (audio), in order. */
  audio: Buffer[];
  /** Bytes of audio received so far. */
  audioBytes(): number;
  /** Sends a message as JSON (a string as it is). */
  send(message: unknown): void;
  /** Sends binary audio. */
  sendAudio(pcm: Buffer): void;
  /** Resolves with the close code and reason once the socket is closed. */
  closed: Promise<{ code: number; reason: string }>;
}

export interface DeepgramOptions {
  headers?: Record<string, string>;
  protocols?: string[];
}

/**
 * Opens `url` (http(s) or ws(s) with its path and query); resolves once open, or rejects with the
 * refusal's `status`, `headers` and `body` when the upgrade is answered over HTTP.
 */
export function openDeepgram(url: string, options: DeepgramOptions = {}): Promise<DeepgramClient> {
  const ws = new WebSocket(url.replace(/^http/, 'ws'), options.protocols ?? [], { headers: options.headers });
  const messages = new Messages();
  const audio: Buffer[] = [];
  let bytes = 0;
  ws.on('message', (data, isBinary) => {
    const buffer = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
    if (isBinary) {
      audio.push(buffer);
      bytes += buffer.length;
    } else messages.push(JSON.parse(buffer.toString('utf8')));
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on('close', (code, reason) => resolve({ code, reason: reason.toString('utf8') })),
  );
  return new Promise((resolve, reject) => {
    ws.on('open', () =>
      resolve({
        ws,
        messages,
        audio,
        audioBytes: () => bytes,
        closed,
        send: (message) => ws.send(typeof message === 'string' ? message : JSON.stringify(message)),
        sendAudio: (pcm) => ws.send(pcm, { binary: true }),
      }),
    );
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => {
        body += chunk;
      });
      res.on('end', () =>
        reject(
          Object.assign(new Error(`refused ${res.statusCode}`), {
            status: res.statusCode,
            headers: res.headers,
            body,
          }),
        ),
      );
    });
    ws.on('error', reject);
  });
}

/** The HTTP refusal of an upgrade: its status, headers and error body; fails if it is accepted. */
export async function deepgramRefusal(
  url: string,
  options?: DeepgramOptions,
): Promise<{ status: number; headers: IncomingHttpHeaders; error: Message }> {
  const err = await openDeepgram(url, options).then(
    ({ ws }) => {
      ws.close();
      throw new Error(`${url} was accepted`);
    },
    (e: { status?: number; headers?: IncomingHttpHeaders; body?: string }) => e,
  );
  if (!err.status) throw new Error(`an HTTP refusal, not ${String(err)}`);
  return { status: err.status, headers: err.headers ?? {}, error: JSON.parse(err.body!).error };
}
