/** Reading Server-Sent Events bodies in tests. */
import assert from 'node:assert/strict';

export type SseEvent = { type?: string; [key: string]: unknown } | '[DONE]';

/**
 * The complete `data:` frames of an SSE body, `[DONE]` as the string. A frame not complete yet (a
 * body still arriving, or cut) is left out; a frame that is not `data: ...` fails the test.
 */
export function sseEvents(body: Buffer): SseEvent[] {
  const frames = body.toString('utf8').split('\n\n');
  frames.pop(); // empty, or a frame not complete yet
  return frames.map((frame) => {
    assert.ok(frame.startsWith('data: '), `not an SSE data frame: ${JSON.stringify(frame)}`);
    const data = frame.slice(6);
    return data === '[DONE]' ? '[DONE]' : (JSON.parse(data) as SseEvent);
  });
}

/** An event's type, or `[DONE]`. */
export const typeOf = (e: SseEvent) => (e === '[DONE]' ? e : e.type);
