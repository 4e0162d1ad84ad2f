/**
 * An answer streamed as it is made, whose status and headers wait for its first byte. Until then
 * nothing is sent, so a failure (a busy model, a bad option the engine refuses, an engine that
 * fails on its first sentence) is still a plain JSON error with its status, as for a whole
 * answer. From the first byte on the body goes out in chunks as the work makes it, and a failure
 * cuts it: the response ends without chunked encoding's last (empty) chunk, which every HTTP
 * client reports as an incomplete body, never as a short file that looks whole (OpenAI's
 * streamed answers end the same way).
 *
 * The work runs from the handler, so the slot it holds is held through the stream: its writes
 * wait for the client (EventStream's bound), and through them the engine does too.
 */
import type { IncomingMessage } from 'node:http';
import type { EventStream } from '../transport/event-stream.js';
import { isInMemory } from '../transport/in-memory.js';
import type { Reply, RouteContext } from '../transport/route.js';

export interface FirstBytePlan<R> {
  /**
   * Runs the work; every byte of the answer goes through `send`, in order, each awaited (it waits
   * for the client once the stream is out). Resolves once the answer is complete.
   */
  produce(send: (bytes: Buffer) => Promise<void>): Promise<R>;
  /** The stream's headers, asked for when its first byte exists. */
  headers(): Record<string, string>;
  /**
   * Trailers for the end of a complete stream, named in the `Trailer` header; over HTTP/1.1 only
   * (an HTTP/1.0 body is not chunked and has no place for them: node refuses the header).
   */
  trailers?: { names: string[]; values(result: R): Record<string, string> };
  /** The answer when the work completed without sending a byte. */
  whole(result: R): Promise<Reply>;
  /** Runs once, however it ended (stops an encoder). */
  cleanup(): void;
  /** Told when a stream already begun is cut by `err` after `sent` body bytes (not when the client left). */
  onCut?(err: unknown, sent: number): void;
}

/** Whether the answer to `req` can be chunked (HTTP/1.1 and later), so a cut one shows as cut. */
function canChunk(req: IncomingMessage): boolean {
  return req.httpVersionMajor > 1 || (req.httpVersionMajor === 1 && req.httpVersionMinor >= 1);
}

/**
 * Whether a plain request's answer may go out as it is made. Not to an HTTP/1.0 client: its body
 * ends when the connection closes, so a cut one would look whole. Not over audio.cpp's WebSocket
 * bridge (its requests come on a connection handed to the server in memory): audio.cpp answers a plain request
 * there with one `response` frame, its timing headers in it.
 */
export function mayStreamPlain(req: IncomingMessage): boolean {
  return canChunk(req) && !isInMemory(req.socket);
}

export async function streamFromFirstByte<R>(ctx: RouteContext, plan: FirstBytePlan<R>): Promise<Reply> {
  const { signal } = ctx;
  const trailers = canChunk(ctx.req) ? plan.trailers : undefined;
  let out: EventStream | undefined;
  let attach!: () => void;
  // Also let go when the client leaves: a send waiting for a stream that will never carry it fails.
  const attached = new Promise<void>((resolve) => {
    attach = resolve;
    signal.addEventListener('abort', () => resolve(), { once: true });
  });
  let firstByte!: () => void;
  const first = new Promise<void>((resolve) => {
    firstByte = resolve;
  });
  let began = false;
  let sent = 0;
  const send = async (bytes: Buffer): Promise<void> => {
    if (bytes.length === 0) return;
    if (!out) {
      began = true;
      firstByte();
      await attached;
      if (!out) throw signal.reason;
    }
    await out.bytes(bytes);
    sent += bytes.length;
  };
  let failure: { err: unknown } | undefined;
  const work = plan.produce(send);
  work.catch((err: unknown) => {
    failure = { err };
  });
  let cleaned = false;
  const cleanup = () => {
    if (cleaned) return;
    cleaned = true;
    plan.cleanup();
  };
  try {
    await Promise.race([first, work]);
    // Completed without a byte: answered whole (or its error thrown), like any plain answer.
    if (!began) return await plan.whole(await work);
  } catch (err) {
    cleanup();
    throw err;
  } finally {
    if (!began) cleanup();
  }
  return {
    stream: {
      format: 'audio',
      run: async (stream) => {
        try {
          // A failure between the first byte and this moment is still answered plainly: nothing was sent.
          if (failure) throw failure.err;
          const headers = plan.headers();
          if (trailers) headers['Trailer'] = trailers.names.join(', ');
          stream.start(headers);
          out = stream;
          attach();
          const done = await work;
          if (trailers) stream.trailers(trailers.values(done));
          await stream.done();
        } catch (err) {
          if (stream.started && !signal.aborted) plan.onCut?.(err, sent);
          // A send still waiting is let go (it fails: no stream), so the work stops at it.
          attach();
          throw err;
        } finally {
          cleanup();
        }
      },
    },
  };
}
