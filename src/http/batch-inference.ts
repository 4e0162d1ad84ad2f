/**
 * Several requests to one model answered as one SSE stream, each result as it completes. voxd's
 * engines have no native batching, so the items run on the model's slots, as many at once as it
 * has, each under its own lease, whatever the model's mode (audio.cpp batches offline models
 * only, because its batches need the offline session's native batching); in the parallel runtime the first lease is taken before the
 * headers, so a busy model is a real 503. A failed item is reported in its own result event and
 * the others go on.
 */
import type { EngineRequest } from '../engines/types.js';
import type { Admission, InferenceOutcome } from '../runtime/runtime.js';
import { toHttp } from './errors.js';
import type { Reply, RouteContext } from './route.js';

export interface BatchPlan {
  modelId: string;
  items: EngineRequest[];
  busyTimeoutMs: number | undefined;
  /** The SSE event of one finished item. */
  result(index: number, outcome: InferenceOutcome): Record<string, unknown>;
  /** The SSE event of an item that failed (it never got a slot, or its run failed). */
  failure(index: number, error: { message: string; type: string }): Record<string, unknown>;
  /** The closing event, once every item finished. */
  done(stats: BatchStats): Record<string, unknown>;
}

export interface BatchStats {
  results: number;
  errors: number;
  wallMs: number;
  outcomes: (InferenceOutcome | undefined)[];
}

export async function batchInference(ctx: RouteContext, plan: BatchPlan): Promise<Reply> {
  const { runtime, signal } = ctx;
  const admit = () => runtime.admit(plan.modelId, { busyTimeoutMs: plan.busyTimeoutMs, signal });
  const first: Admission | undefined = runtime.parallel ? await admit() : undefined;
  return {
    stream: {
      format: 'sse',
      run: async (out) => {
        let early = first;
        const started = performance.now();
        // Not `new Array(n)`: a sparse array would hide failed items from every() and map().
        const outcomes = Array.from<InferenceOutcome | undefined>({ length: plan.items.length });
        let errors = 0;
        let next = 0;
        const events: Promise<void>[] = [];
        const write = (event: Record<string, unknown>) => {
          const written = out.event(event);
          events.push(written);
          return written;
        };
        const fail = (index: number, err: unknown) => {
          errors++;
          return write(plan.failure(index, toHttp(err).body.error));
        };
        const worker = async () => {
          while (next < plan.items.length && !signal.aborted) {
            const index = next++;
            let admission = early;
            early = undefined;
            try {
              admission ??= await admit();
            } catch (err) {
              if (signal.aborted) throw err;
              await fail(index, err);
              continue;
            }
            try {
              const outcome = await admission.run(plan.items[index]!, { signal });
              outcomes[index] = outcome;
              await write(plan.result(index, outcome));
            } catch (err) {
              if (signal.aborted) throw err;
              await fail(index, err);
            } finally {
              admission.release();
            }
          }
        };
        try {
          out.start();
          const width = Math.max(
            1,
            Math.min(plan.items.length, runtime.get(plan.modelId).scheduler.capacity),
          );
          await Promise.all(Array.from({ length: width }, worker));
          await Promise.all(events);
          await out.event(
            plan.done({
              results: plan.items.length - errors,
              errors,
              wallMs: performance.now() - started,
              outcomes,
            }),
          );
          await out.done();
        } finally {
          early?.release();
        }
      },
    },
  };
}
