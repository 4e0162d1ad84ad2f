/**
 * The audio exchange a Wyoming connection has open, from its audio-start to its end, run as the
 * session's work (session-shell.ts): so the memory it leaves is given back once the server is quiet,
 * its deadline bounds a live transcription that a client feeds 10 ms at a time (probe 2026-12, F14),
 * and its own abort ends it early whoever asks: a second audio-start (F2), the client leaving, a
 * shutdown, a chunk it refuses. Until audio-stop it only waits for the client, so the connection
 * still counts as idle meanwhile; from audio-stop to its answer voxd is the one working.
 */
import type { VoxdError } from '../errors.js';
import { ByteLease } from '../session/byte-budget.js';
import type { SessionShell } from '../session/session-shell.js';
import { deferred, raceAbort, untilAborted } from '../util/wait.js';
import type { AudioExchange, ExchangeContext } from './exchange.js';

export interface ExchangeDeadline {
  ms: number;
  late: () => VoxdError;
}

export class OpenExchange {
  readonly exchange: AudioExchange;
  /**
   * Settles once the exchange is over: undefined when it answered, else why it ended. It never
   * rejects, and the exchange's bytes have gone back by then.
   */
  readonly ended: Promise<Error | undefined>;
  readonly #shell: SessionShell;
  readonly #abort = new AbortController();
  readonly #stopped = deferred<void>();

  constructor(
    shell: SessionShell,
    context: Omit<ExchangeContext, 'signal' | 'bytes'>,
    make: (context: ExchangeContext) => AudioExchange,
    deadline: ExchangeDeadline | undefined,
  ) {
    this.#shell = shell;
    const bytes = new ByteLease(shell.bytes.budget, 'Wyoming utterance');
    this.exchange = make({ ...context, signal: this.#abort.signal, bytes });
    this.ended = shell
      .work((signal) => this.#run(signal), deadline, { clientPaced: true })
      .then(
        () => undefined,
        (err: unknown) => (err instanceof Error ? err : new Error(String(err))),
      )
      .finally(() => bytes.end());
  }

  /** Aborted when the exchange ends early. */
  get signal(): AbortSignal {
    return this.#abort.signal;
  }

  /** The client's audio-stop: the exchange answers; resolves as `ended` does. */
  finish(): Promise<Error | undefined> {
    this.#stopped.resolve();
    return this.ended;
  }

  /** Ends the exchange now: a live engine stops waiting for audio and its slot is freed. */
  abandon(reason: Error): void {
    if (this.#abort.signal.aborted) return;
    this.#abort.abort(reason);
    this.exchange.abandon(reason);
  }

  async #run(work: AbortSignal): Promise<void> {
    // The session ending and the deadline reach the exchange through its own abort.
    const onEnd = () => this.abandon(work.reason as Error);
    if (work.aborted) onEnd();
    else work.addEventListener('abort', onEnd, { once: true });
    try {
      await Promise.race([this.#stopped.promise, untilAborted(this.#abort.signal)]);
      await this.#shell.work(() => raceAbort(this.exchange.stop(), this.#abort.signal));
    } finally {
      work.removeEventListener('abort', onEnd);
    }
  }
}
