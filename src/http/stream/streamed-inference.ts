/**
 * One inference answered as a stream. The slot lease is held from admission until the last byte
 * is written or the client goes away. In the parallel runtime it is taken before the headers, so
 * a busy model is a real HTTP 503; the serial runtime sends the headers first and takes its lock
 * inside the stream (a busy model is then an SSE error event), as audio.cpp's two runtimes do.
 */
import type { EngineEvent, EngineRequest } from '../../engines/types.js';
import type { Admission, InferenceOutcome } from '../../runtime/runtime.js';
import type { EventStream, StreamFormat } from '../transport/event-stream.js';
import type { Reply, RouteContext } from '../transport/route.js';

export interface StreamPlan {
  modelId: string;
  request: EngineRequest;
  busyTimeoutMs: number | undefined;
  format: StreamFormat;
  /** Extra response headers (a live route closes its connection: `Connection: close`). */
  headers?: Record<string, string>;
  /** Runs when the stream is over, however it ended (a live route closes its body reader). */
  cleanup?: () => void;
  /**
   * The events carry the whole answer and `finish` reads no audio from the result, so the engine
   * need not also keep it whole (a long streamed speech would otherwise be held in memory).
   */
  eventsOnly?: boolean;
  /** Writes one engine event; called in order, each after the previous one's write finished. */
  onEvent(event: EngineEvent, out: EventStream, sinceStartMs: number): Promise<void>;
  /** Writes the closing events (the `done` event) once the engine finished. */
  finish(outcome: InferenceOutcome, out: EventStream): Promise<void>;
}

export async function streamedInference(ctx: RouteContext, plan: StreamPlan): Promise<Reply> {
  const { runtime, signal, trace } = ctx;
  const admit = () => runtime.admit(plan.modelId, { busyTimeoutMs: plan.busyTimeoutMs, signal, trace });
  let early: Admission | undefined;
  try {
    // A full queue is a plain 503 in both runtimes: the serial one checks before its headers, and
    // takes its place in the same turn (nothing else runs between here and its admit()).
    runtime.checkQueueRoom(plan.modelId);
    early = runtime.parallel ? await admit() : undefined;
  } catch (err) {
    plan.cleanup?.();
    throw err;
  }
  return {
    stream: {
      format: plan.format,
      run: async (out) => {
        let admission = early;
        try {
          // Headers go out once the request holds its place (parallel) or before it queues (serial);
          // from here on, a failure is an SSE error event.
          out.start(plan.headers);
          admission ??= await admit();
          const started = performance.now();
          // Each event's write is chained after the one before it, and the engine is handed that
          // write's promise: an engine that awaits it (every streaming engine does) makes its next
          // piece only once the client took this one, so a slow client slows the engine instead
          // of queueing the answer here (see EventStream's buffer bound).
          let writes = Promise.resolve();
          let failure: unknown;
          let first = true;
          const onEvent = (event: EngineEvent): Promise<void> => {
            const at = performance.now() - started;
            if (first) {
              first = false;
              // The same measure as the done event's ttft_ms: from the run's start, after admission.
              ctx.metrics?.firstOutput(plan.modelId, ctx.url.pathname, at / 1000);
            }
            writes = writes
              .then(() => (failure === undefined ? plan.onEvent(event, out, at) : undefined))
              .catch((err: unknown) => {
                failure ??= err;
              });
            // Once the stream failed its events are dropped at once; each then waits a turn of the
            // event loop, so an engine whose awaits are all settled promises cannot keep the loop
            // from the client-gone abort that stops it.
            if (failure !== undefined)
              return writes.then(() => new Promise((resolve) => setImmediate(resolve)));
            return writes;
          };
          const outcome = await admission.run(plan.request, {
            signal,
            trace,
            onEvent,
            eventsOnly: plan.eventsOnly,
          });
          await writes;
          if (failure !== undefined) throw failure;
          await plan.finish(outcome, out);
          await out.done();
        } finally {
          admission?.release();
          plan.cleanup?.();
        }
      },
    },
  };
}
