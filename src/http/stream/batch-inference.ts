/**
 * Several requests to one model answered as one SSE stream, each result as it completes. voxd's
 * engines have no native batching, so the items run on the model's slots, as many at once as it
 * has, whatever the model's mode (audio.cpp batches offline models only, because its batches need
 * the offline session's native batching). The batch holds its leases from admission to its last
 * byte, like a stream; in the parallel runtime they are taken before the headers, so a busy model
 * is a real 503. A failed item is reported in its own result event and the others go on.
 */

import type { EngineRequest } from '../../engines/types.js';
import { describeError, type ErrorObject } from '../../errors.js';
import type { Admission, InferenceOutcome } from '../../runtime/runtime.js';
import type { Reply, RouteContext } from '../transport/route.js';

export interface BatchPlan {
  modelId: string;
  items: EngineRequest[];
  busyTimeoutMs: number | undefined;
  /** The SSE event of one finished item. */
  result(index: number, outcome: InferenceOutcome): Record<string, unknown>;
  /** The SSE event of an item that failed (it never got a slot, or its run failed). */
  failure(index: number, error: ErrorObject): Record<string, unknown>;
  /** The closing event, once every item finished. */
  done(stats: BatchStats): Record<string, unknown>;
}

export interface BatchStats {
  results: number;
  errors: number;
  wallMs: number;
  outcomes: (InferenceOutcome | undefined)[];
}

/**
 * The batch's leases, all requested at once so they queue side by side: a manager that arrives
 * later waits for the whole batch, as for one request. If any cannot be had, the others go back.
 */
async function admitAll(admit: () => Promise<Admission>, width: number): Promise<Admission[]> {
  const results = await Promise.allSettled(Array.from({ length: width }, admit));
  const granted = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const refused = results.find((r) => r.status === 'rejected');
  if (refused) {
    for (const admission of granted) admission.release();
    throw refused.reason;
  }
  return granted;
}

export async function batchInference(ctx: RouteContext, plan: BatchPlan): Promise<Reply> {
  const { runtime, signal, trace } = ctx;
  const admit = () => runtime.admit(plan.modelId, { busyTimeoutMs: plan.busyTimeoutMs, signal, trace });
  // As many items at once as the model has slots, each slot leased for the whole batch.
  const width = Math.max(1, Math.min(plan.items.length, runtime.get(plan.modelId).scheduler.capacity));
  // Every place at once, before anything queues: admitAll would otherwise wait for the leases it
  // did get before giving them back.
  runtime.checkQueueRoom(plan.modelId, width);
  const early = runtime.parallel ? await admitAll(admit, width) : undefined;
  return {
    stream: {
      format: 'sse',
      run: async (out) => {
        let admissions = early;
        const started = performance.now();
        // Not `new Array(n)`: a sparse array would hide failed items from every() and map().
        const outcomes = Array.from<InferenceOutcome | undefined>({ length: plan.items.length });
        let errors = 0;
        let next = 0;
        const write = (event: Record<string, unknown>) => out.event(event);
        const worker = async (admission: Admission) => {
          while (next < plan.items.length && !signal.aborted) {
            const index = next++;
            try {
              const outcome = await admission.run(plan.items[index]!, { signal, trace });
              outcomes[index] = outcome;
              await write(plan.result(index, outcome));
            } catch (err) {
              if (signal.aborted) throw err;
              errors++;
              await write(plan.failure(index, describeError(err).error));
            }
          }
        };
        try {
          out.start();
          admissions ??= await admitAll(admit, width);
          await Promise.all(admissions.map(worker));
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
          for (const admission of admissions ?? []) admission.release();
        }
      },
    },
  };
}
