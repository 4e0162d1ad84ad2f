// Server-sent events from a fetch Response: EventSource cannot POST, so the body is read by hand.

/** Yields the parsed JSON of each `data:` frame; stops after `[DONE]` (and says whether it came). */
export async function* sseEvents(res, signal) {
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  const onAbort = () => reader.cancel().catch(() => undefined);
  signal?.addEventListener('abort', onAbort, { once: true });
  let buffered = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffered += value.replace(/\r\n?/g, '\n');
      const frames = buffered.split('\n\n');
      buffered = frames.pop();
      for (const frame of frames) {
        const data = frameData(frame);
        if (data === undefined) continue;
        if (data === '[DONE]') return;
        yield JSON.parse(data);
      }
    }
    if (!signal?.aborted) throw new Error('the stream ended before [DONE]');
  } finally {
    signal?.removeEventListener('abort', onAbort);
    reader.releaseLock();
  }
}

/** The joined `data:` lines of one frame; undefined for a comment-only frame (a heartbeat). */
function frameData(frame) {
  const lines = frame
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => line.slice(5).replace(/^ /, ''));
  return lines.length > 0 ? lines.join('\n') : undefined;
}
