/**
 * The runtime's shutdown: no new work from its start, a deadline for the running requests, then
 * their cancellation, and the unload of every model within a grace period for stuck teardowns.
 */
import { VoxdError } from '../errors.js';
import type { Clock, Timer } from '../util/clock.js';
import type { ModelEntry } from './model-entry.js';
import { unloadEntry } from './reconfiguration.js';
import { TEARDOWN_GRACE_MS } from './shutdown-timing.js';

export interface ShutdownDeps {
  clock: Clock;
  log(message: string): void;
  /** The registered models, all unloaded by the shutdown. */
  entries: ReadonlyMap<string, ModelEntry>;
  /** The idle retirement stops first: it would otherwise unload models beside the shutdown. */
  stopIdleTimer(): void;
  /** Aborts every running request with `reason`, and each one started from now on. */
  cancelRuns(reason: VoxdError): void;
}

export class Shutdown {
  readonly #deps: ShutdownDeps;
  /** Aborted once the shutdown ended, or gave up on running work: loads and probes stop waiting. */
  readonly #controller = new AbortController();
  #closing: Promise<void> | undefined;

  constructor(deps: ShutdownDeps) {
    this.#deps = deps;
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** True once a shutdown began: readiness probes answer not-ready, new work is refused. */
  get closing(): boolean {
    return this.#closing !== undefined;
  }

  refuseWhenClosing(): void {
    if (this.#closing) throw new VoxdError('E_SHUTTING_DOWN', 'voxd is shutting down and takes no new work');
  }

  /**
   * Takes no new work, sends every queued request and waiting manager away (503), lets the
   * running requests finish for up to `deadlineMs` (0: without limit), then cancels what still
   * runs through its AbortSignal (a thread is terminated, a runner process killed), and unloads
   * every model. A second call joins the first.
   */
  close(deadlineMs: number): Promise<void> {
    this.#closing ??= (async () => {
      const { clock, entries } = this.#deps;
      this.#deps.stopIdleTimer();
      const refusal = new VoxdError('E_SHUTTING_DOWN', 'voxd is shutting down; the request was not started');
      for (const entry of entries.values()) entry.scheduler.refuseWaiting(refusal);
      const pending = new Set(entries.keys());
      const unloads = Promise.allSettled(
        [...entries.values()].map((entry) => unloadEntry(entry).finally(() => pending.delete(entry.id))),
      );
      const timer =
        deadlineMs > 0
          ? clock.after(deadlineMs, () => this.cancelRunning(`it ran past shutdown_timeout_ms=${deadlineMs}`))
          : undefined;
      // A teardown that never ends (an engine's dispose stuck) must not keep the shutdown open
      // either: past the deadline and a grace period, the shutdown ends without it.
      let giveUp: Timer | undefined;
      const abandoned = new Promise<void>((resolve) => {
        if (deadlineMs > 0) giveUp = clock.after(deadlineMs + TEARDOWN_GRACE_MS, resolve);
      });
      try {
        await Promise.race([unloads, abandoned]);
      } finally {
        timer?.cancel();
        giveUp?.cancel();
      }
      if (pending.size > 0)
        this.#deps.log(
          `shutdown: gave up waiting for the teardown of ${[...pending].join(', ')} (${TEARDOWN_GRACE_MS} ms past shutdown_timeout_ms)`,
        );
      this.#controller.abort(new VoxdError('E_SHUTTING_DOWN', 'voxd is shutting down'));
    })();
    return this.#closing;
  }

  /**
   * Cancels every running request now (a shutdown's deadline, or a second signal), and every load
   * in progress: a load that never ends would otherwise keep its model's unload, and the
   * shutdown, waiting.
   */
  cancelRunning(why: string): void {
    const reason = new VoxdError(
      'E_SHUTTING_DOWN',
      `voxd is shutting down: the request was cancelled because ${why}`,
    );
    this.#deps.cancelRuns(reason);
    this.#controller.abort(reason);
  }
}
