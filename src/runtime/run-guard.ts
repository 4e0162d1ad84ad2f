/**
 * The abort of one run on a session (inference.ts): its own controller, aborted when the client
 * goes away, when a shutdown cancels the running requests (cancelAll, through the set of running
 * controllers rather than a listener), or past max_inference_ms. It is built by hand rather than
 * with AbortSignal.any and AbortSignal.timeout: on Node 20 each AbortSignal costs several
 * microseconds to make (AbortSignal.any adds a WeakRef and a FinalizationRegistry entry,
 * AbortSignal.timeout a second signal), and this path runs thousands of times a second.
 */
import { VoxdError } from '../errors.js';
import type { Clock, Timer } from '../util/clock.js';
import { type AbortSource, LazyAbort } from '../util/lazy-abort.js';

export class RunGuard {
  /** The run's abort; its signal is made only when something reads it (the fixture's no-op run does not). */
  readonly run = new LazyAbort();
  /** The 504 the watchdog aborted the run with, once it fired. */
  overran: VoxdError | undefined;
  readonly #client: AbortSource;
  readonly #running: Set<LazyAbort>;
  readonly #onClientAbort = () => this.run.abort(this.#client.reason);
  #watchdog: Timer | undefined;

  /** `shutdown`: aborted once a shutdown gave up on running requests; `running`: what it aborts. */
  constructor(client: AbortSource, shutdown: AbortSignal, running: Set<LazyAbort>) {
    this.#client = client;
    this.#running = running;
    if (client.aborted) this.run.abort(client.reason);
    else if (shutdown.aborted) this.run.abort(shutdown.reason);
    else {
      client.addEventListener('abort', this.#onClientAbort, { once: true });
      running.add(this.run);
    }
  }

  /**
   * Starts the max_inference_ms watchdog (0: none). Called once the pool is ready, not before: a
   * cold load (after an eviction, an idle retirement, a reconfiguration) is not inference, and a
   * load slower than max_inference_ms would otherwise answer the first request after it 504
   * without having run anything.
   */
  arm(clock: Clock, maxMs: number, model: string): void {
    if (maxMs <= 0 || this.run.aborted) return;
    this.#watchdog = clock.after(
      maxMs,
      () => {
        // The watchdog aborts with the 504 itself, so whoever hears the abort (another request
        // on a shared runner, say) is told what happened.
        this.overran = new VoxdError(
          'E_INFERENCE_TIMEOUT',
          `model '${model}': the request ran past max_inference_ms=${maxMs} and was cancelled`,
        );
        this.run.abort(this.overran);
      },
      { unref: true },
    );
  }

  /** The run is over: stops listening to the client, leaves the running set, stops the watchdog. */
  close(): void {
    this.#client.removeEventListener('abort', this.#onClientAbort);
    this.#running.delete(this.run);
    this.#watchdog?.cancel();
  }
}
