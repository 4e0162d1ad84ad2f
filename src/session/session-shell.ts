/**
 * The shell of one streaming session (a realtime WebSocket, a Wyoming connection, a bridge socket):
 * what every protocol needs around `runtime.infer` and had written for itself, each copy missing
 * something different (probe 2026-12). A protocol keeps its framing and its event shapes; the shell
 * owns:
 *
 * - the inbox: events handled one at a time in arrival order; past `inboxEvents` (or `inboxBytes`)
 *   waiting, the source is paused (the socket stops being read), so a client cannot queue work
 *   faster than it is done;
 * - one client-gone abort (`signal`) that every wait of the session takes: queue waits, runs, live
 *   input (the runtime wakes a live feed on its run's signal) and sends;
 * - the timers, on the runtime's clock so a ManualClock test moves them: idle (no whole event for
 *   `idleMs` while the session has no work running), one event's deadline (an event begun must be
 *   whole within `eventMs`: bytes trickled one by one are not activity), the session's whole life
 *   (`lifetimeMs`), and a deadline per piece of work (`work(..., {deadlineMs})`: a live turn fed
 *   10 ms per idle period still ends);
 * - the session's share of the server's byte budget (`bytes`), given back when it ends;
 * - the memory release: work done by a session counts as a request's, so what it left is given
 *   back once the server is quiet, not at the next HTTP request.
 *
 * The protocol is told how its session ended through `expire` (idle, lifetime, event deadline) with
 * a VoxdError it renders in its own terms (error event, close code); `leave` is the client going.
 */
import { VoxdError } from '../errors.js';
import type { SessionEndReason, SessionProtocol } from '../observability/metrics.js';
import type { Timer } from '../util/clock.js';
import { ByteLease } from './byte-budget.js';
import type { SessionHost } from './session-host.js';

export interface ShellOptions {
  /** What the session is, in messages ("realtime session", "Wyoming connection"). */
  what: string;
  /** Its protocol, for voxd_sessions_ended_total. */
  protocol?: SessionProtocol;
  /** Events waiting before the source is paused. */
  inboxEvents: number;
  /** Bytes of events waiting (as `receive` counts them) past which the source is paused too. */
  inboxBytes?: number;
  /** No whole event and no work for this long ends the session (0: never). */
  idleMs: number;
  /** The setting idleMs comes from, named in the message. */
  idleSetting: string;
  /** An event begun must arrive whole within this (0 or absent: no such limit). */
  eventMs?: number;
  /** The session's longest life (0 or absent: none). */
  lifetimeMs?: number;
  lifetimeSetting?: string;
  /** Stops reading the client / starts again. */
  pause(): void;
  resume(): void;
  /** The session must end for `why` (a timer): the protocol tells its client and closes. */
  expire(why: VoxdError): void;
}

export class SessionShell {
  readonly #host: SessionHost;
  readonly #options: ShellOptions;
  readonly #gone = new AbortController();
  /** The session's share of the server's byte budget. */
  readonly bytes: ByteLease;
  #inbox: Promise<void> = Promise.resolve();
  #waiting = 0;
  #waitingBytes = 0;
  #paused = false;
  /** Pieces of work running (a turn, an exchange, a request): the session is not idle meanwhile. */
  #working = 0;
  #idle: Timer | undefined;
  #event: Timer | undefined;
  /** An event is part-read; its deadline waits while the source is paused. */
  #eventOpen = false;
  #lifetime: Timer | undefined;
  #ended = false;

  constructor(host: SessionHost, options: ShellOptions) {
    this.#host = host;
    this.#options = options;
    this.bytes = new ByteLease(host.budget, options.what);
    const life = options.lifetimeMs ?? 0;
    if (life > 0)
      this.#lifetime = host.clock.after(life, () =>
        this.#expire(
          new VoxdError(
            'E_SESSION_EXPIRED',
            `the ${options.what} reached ${options.lifetimeSetting ?? 'its longest life'} (${life} ms); open a new one`,
          ),
        ),
      );
    this.#armIdle();
  }

  /** Aborted when the session ends (the client left, or a timer ended it): every wait takes it. */
  get signal(): AbortSignal {
    return this.#gone.signal;
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** Pieces of work running now. */
  get working(): number {
    return this.#working;
  }

  /**
   * One whole event arrived: `handle` runs after the events before it. Past `inboxEvents` waiting,
   * or past `inboxBytes` of them (`bytes`: what this one holds, its payload), the source is paused
   * until the inbox drains below both. A failure of `handle` is the handler's own to render; the
   * inbox goes on.
   */
  receive(handle: () => Promise<void> | void, bytes = 0): void {
    if (this.#ended) return;
    this.#eventWhole();
    this.#armIdle();
    this.#waiting++;
    this.#waitingBytes += bytes;
    if (this.#full() && !this.#paused) {
      this.#paused = true;
      // The rest of a part-read event may be waiting unread behind our own pause: its deadline
      // stops until reading resumes, since the client is not the one holding it back.
      this.#event?.cancel();
      this.#event = undefined;
      this.#options.pause();
    }
    this.#inbox = this.#inbox.then(async () => {
      try {
        if (!this.#ended) await handle();
      } catch {
        // The handler renders its own failures; one that throws anyway must not stop the inbox.
      }
      this.#waiting--;
      this.#waitingBytes -= bytes;
      if (!this.#full() && this.#paused) {
        this.#paused = false;
        if (!this.#ended) {
          this.#options.resume();
          if (this.#eventOpen) this.#armEvent();
        }
      }
      if (this.#waiting === 0) this.#armIdle();
    });
  }

  /**
   * One message of `size` bytes arrived: it waits in the inbox with its bytes held on the session's
   * budget until `handle` runs; when they do not fit, `refused` runs in its turn instead, with the
   * budget's refusal.
   */
  arrived(size: number, handle: () => Promise<void> | void, refused: (err: unknown) => void): void {
    try {
      this.bytes.hold(size);
    } catch (err) {
      this.receive(() => refused(err));
      return;
    }
    this.receive(() => {
      this.bytes.free(size);
      return handle();
    }, size);
  }

  #full(): boolean {
    const bytes = this.#options.inboxBytes ?? 0;
    return this.#waiting >= this.#options.inboxEvents || (bytes > 0 && this.#waitingBytes > bytes);
  }

  /**
   * Part of an event arrived and the rest has not: its deadline starts (once per event). While the
   * source is paused the deadline waits, and starts afresh when reading resumes.
   */
  eventBegun(): void {
    if ((this.#options.eventMs ?? 0) <= 0 || this.#ended) return;
    this.#eventOpen = true;
    if (!this.#paused) this.#armEvent();
  }

  #armEvent(): void {
    const ms = this.#options.eventMs ?? 0;
    if (ms <= 0 || this.#event || this.#ended) return;
    this.#event = this.#host.clock.after(ms, () =>
      this.#expire(
        new VoxdError(
          'E_SESSION_IDLE',
          `the ${this.#options.what} began an event and did not complete it within ${ms} ms`,
        ),
      ),
    );
  }

  #eventWhole(): void {
    this.#eventOpen = false;
    this.#event?.cancel();
    this.#event = undefined;
  }

  /** Resolves once every event received so far has been handled. */
  settled(): Promise<void> {
    return this.#inbox;
  }

  /**
   * Runs one piece of work (a turn, an exchange, a bridged request) as the server's work: the
   * session is not idle while it runs, the memory it leaves is given back once the server is quiet,
   * and past `deadlineMs` its signal aborts with `late` (the work's own deadline, for live input that
   * could otherwise trickle for ever). `fn` gets a signal aborted by the session's end or the deadline.
   *
   * `clientPaced` work moves only as the client sends (a live exchange between two of its audio
   * chunks): the session still counts as idle while it runs, so a client that stops feeding it is
   * let go at the idle timeout rather than at the work's deadline.
   */
  async work<T>(
    fn: (signal: AbortSignal) => Promise<T>,
    deadline?: { ms: number; late: () => VoxdError },
    options: { clientPaced?: boolean } = {},
  ): Promise<T> {
    const busy = options.clientPaced !== true;
    if (busy) {
      this.#working++;
      this.#idle?.cancel();
    }
    this.#host.memory.requestStarted();
    let timer: Timer | undefined;
    let signal = this.#gone.signal;
    if (deadline && deadline.ms > 0) {
      const own = new AbortController();
      const onGone = () => own.abort(this.#gone.signal.reason);
      if (this.#gone.signal.aborted) onGone();
      else this.#gone.signal.addEventListener('abort', onGone, { once: true });
      timer = this.#host.clock.after(deadline.ms, () => own.abort(deadline.late()));
      signal = own.signal;
      try {
        return await fn(signal);
      } finally {
        this.#gone.signal.removeEventListener('abort', onGone);
        timer.cancel();
        this.#workDone(busy);
      }
    }
    try {
      return await fn(signal);
    } finally {
      this.#workDone(busy);
    }
  }

  #workDone(busy: boolean): void {
    this.#host.memory.requestEnded();
    // Client-paced work never stopped the idle wait: it goes on from the client's last event.
    if (!busy) return;
    this.#working--;
    this.#armIdle();
  }

  /** The client went (or the protocol ended the session): every wait wakes, every byte goes back. */
  leave(reason: VoxdError): void {
    if (this.#ended) return;
    this.#ended = true;
    const { protocol } = this.#options;
    if (protocol) this.#host.metrics?.sessionEnded(protocol, endReason(reason));
    for (const timer of [this.#idle, this.#event, this.#lifetime]) timer?.cancel();
    this.bytes.end();
    this.#gone.abort(reason);
  }

  #expire(why: VoxdError): void {
    if (this.#ended) return;
    this.#options.expire(why);
  }

  #armIdle(): void {
    const ms = this.#options.idleMs;
    this.#idle?.cancel();
    this.#idle = undefined;
    if (ms <= 0 || this.#ended || this.#working > 0) return;
    this.#idle = this.#host.clock.after(ms, () =>
      this.#expire(
        new VoxdError(
          'E_SESSION_IDLE',
          `the client sent no event for ${this.#options.idleSetting} (${ms} ms)`,
        ),
      ),
    );
  }
}

/** The metric's reason for an end, from the error the session ended with. */
function endReason(reason: unknown): SessionEndReason {
  switch ((reason as VoxdError | undefined)?.code) {
    case 'E_CLIENT_GONE':
      return 'client_gone';
    case 'E_SESSION_IDLE':
      return 'idle';
    case 'E_SESSION_EXPIRED':
      return 'expired';
    case 'E_SEND_TIMEOUT':
      return 'send_timeout';
    case 'E_SHUTTING_DOWN':
      return 'shutdown';
    default:
      return 'error';
  }
}

/**
 * Waits until `writable` drains, `signal` aborts, or `ms` pass (0: no limit); false when the
 * time ran out (the client stopped reading: the protocol ends the session). A send that waits for
 * its client must never hold a model's slot without bound (probe 2026-12, F13).
 */
export function drained(
  writable: NodeJS.EventEmitter & { destroyed?: boolean },
  host: SessionHost,
  ms: number,
  signal: AbortSignal,
): Promise<boolean> {
  if (signal.aborted || writable.destroyed) return Promise.resolve(true);
  return new Promise<boolean>((resolve) => {
    const done = (ok: boolean) => {
      writable.off('drain', onDrain);
      writable.off('close', onDrain);
      signal.removeEventListener('abort', onDrain);
      timer?.cancel();
      resolve(ok);
    };
    const onDrain = () => done(true);
    writable.on('drain', onDrain);
    writable.on('close', onDrain);
    signal.addEventListener('abort', onDrain, { once: true });
    const timer = ms > 0 ? host.clock.after(ms, () => done(false)) : undefined;
  });
}
