/**
 * What the runtime learns about a request (the model, the slot, the queue wait and the run time)
 * carried back to the HTTP layer for the request's log line.
 *
 * The trace is the request's client-gone abort source itself, so it costs no allocation and
 * reaches the runtime through the `signal` every route already passes; routes that pass the real
 * AbortSignal instead reach it through a symbol set on that signal when it is made.
 */
import { type AbortSource, LazyAbort } from '../util/lazy-abort.js';

const TRACE = Symbol('voxd.requestTrace');

export class RequestTrace extends LazyAbort {
  model: string | undefined = undefined;
  slot: number | undefined = undefined;
  queueMs: number | undefined = undefined;
  inferenceMs: number | undefined = undefined;

  override get signal(): AbortSignal {
    const signal = super.signal as AbortSignal & { [TRACE]?: RequestTrace };
    signal[TRACE] ??= this;
    return signal;
  }
}

/** The trace behind a request's abort source, if it came from the HTTP server. */
export function traceOf(source: AbortSource): RequestTrace | undefined {
  if (source instanceof RequestTrace) return source;
  return (source as { [TRACE]?: RequestTrace })[TRACE];
}
