/**
 * An async iterable that stops when a signal aborts, even while it waits for its source's next item.
 * `for await` over a source that is fed from outside (a realtime turn's or a Wyoming utterance's
 * audio, pushed as the client sends it) otherwise waits for the next push for ever once the client
 * has gone: the abort reached the run's signal but nothing woke the loop, and the model's slot was
 * held until restart (probe 2026-12, F1 and F2). Every live input goes through this, so a client
 * leaving, a shutdown's cancellation and max_inference_ms all end the run, on every protocol.
 */
export async function* untilAborted<T>(source: AsyncIterable<T>, signal: AbortSignal): AsyncIterable<T> {
  const iterator = source[Symbol.asyncIterator]();
  let onAbort: () => void = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
  });
  // The race below may lose to a next() that settles first; the rejection is then nobody's.
  aborted.catch(() => undefined);
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  let done = false;
  try {
    for (;;) {
      const next = await Promise.race([iterator.next(), aborted]);
      if (next.done) {
        done = true;
        return;
      }
      yield next.value;
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
    // The source is told the consumer stopped; not awaited: a generator parked on its own wait
    // would answer only when that wait ends.
    if (!done) void Promise.resolve(iterator.return?.()).catch(() => undefined);
  }
}
