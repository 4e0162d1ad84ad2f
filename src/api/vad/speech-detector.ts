/**
 * Voice activity in a stream (a realtime session's server VAD, a Wyoming VAD exchange): finds where speech starts and where the silence that ends a
 * turn has passed, in the session's audio as it is appended. The VAD model is asked like any
 * request (`probe`: the model's FIFO, its slots, management barriers), over short windows of the
 * newest audio with a little already-examined audio before them for the model to settle on, so an
 * idle session holds no VAD state and no slot between probes: silero's own state lives in its
 * runner, one per slot, and a session would need its own (12 MB) to keep it across calls.
 *
 * A probe runs when PROBE_STEP_MS of new audio is waiting (within a turn whose silence window is no
 * longer, a third of that window), or sooner when the audio reaches the end of a turn's silence window, so the end of a
 * turn is seen within one append of its happening.
 * One probe per session is in flight at a time; audio appended meanwhile waits for the next, and
 * audio sent faster than real time is examined in order, every sample once, in windows of up to
 * MAX_WINDOW_MS. silero's answer depends on where a window starts and ends, so the turns found in
 * audio sent faster than real time can differ from those found at real time (docs/realtime.md;
 * scripts/bench-vad-turns.mjs measures it); at either pace no two turns share audio.
 */
import type { SampleBuffer } from './sample-buffer.js';

/** What counts as speech and as the end of a turn. */
export interface DetectorSettings {
  /** Speech probability above which a window is speech (silero takes 0.01..0.99). */
  threshold: number;
  /** Audio before a detected start that a turn keeps (a word's onset); the detector keeps it buffered. */
  prefixPaddingMs: number;
  /** Silence after speech that ends the turn. */
  silenceDurationMs: number;
  /** Audio without speech after which `idle` is told; 0: never. */
  idleTimeoutMs: number;
}

/** New audio that triggers a probe. */
export const PROBE_STEP_MS = 300;
/**
 * Within a turn whose silence window is no longer than PROBE_STEP_MS, a probe comes after a third
 * of the window (at least this much new audio): silero calls speech that reaches a window's end
 * speech to that end, so a turn's end is only known one probe after it happened, and with 300 ms
 * steps a 300 ms window was decided up to 300 ms late (a /v1/listen speech_final 166 ms after the
 * window at the median). Longer windows keep the 300 ms step: a regular probe reveals the end in
 * time, and their turns stay as they were found.
 */
const MIN_TURN_STEP_MS = 100;
/** Audio already examined that each probe repeats, for silero's state to settle before new audio. */
export const CONTEXT_MS = 300;
/** The most new audio one probe takes: audio sent faster than real time is examined in steps. */
const MAX_WINDOW_MS = 5_000;

/** Speech spans of a window, in seconds from its start. */
export type Probe = (samples: Float32Array, threshold: number) => Promise<{ start: number; end: number }[]>;

export interface DetectorEvents {
  /** Speech starts at `position` (before any prefix padding). */
  started(position: number): void;
  /** Audio up to `to` has been examined, and speech goes on. */
  examined(to: number): void;
  /**
   * The turn's speech ended at `position` and its silence window has passed by `to` (or the turn
   * reached its longest at `to`); a next turn starts after `to`.
   */
  stopped(position: number, to: number): void;
  /** No speech in [from, to) for the idle timeout. */
  idle(from: number, to: number): void;
  /** A probe failed; told once until one succeeds again. */
  failed(err: unknown): void;
}

export class SpeechDetector {
  readonly #buffer: SampleBuffer;
  readonly #rate: number;
  readonly #vad: DetectorSettings;
  readonly #probe: Probe;
  readonly #events: DetectorEvents;
  readonly #maxTurn: number;
  /** Audio up to here has been examined. */
  #probedTo: number;
  /** A new turn cannot start before here (the end of the last one). */
  #floor: number;
  /** Where the time without speech counts from, for the idle timeout. */
  #quietFrom: number;
  #speechStart: number | undefined;
  #lastSpeechEnd = 0;
  #probing = false;
  /** The probe in flight (settled when none is). */
  #inFlight: Promise<void> = Promise.resolve();
  #failing = false;
  #stopped = false;

  constructor(
    buffer: SampleBuffer,
    rate: number,
    vad: DetectorSettings,
    probe: Probe,
    events: DetectorEvents,
    maxTurnSeconds: number,
  ) {
    this.#buffer = buffer;
    this.#rate = rate;
    this.#vad = vad;
    this.#probe = probe;
    this.#events = events;
    this.#maxTurn = Math.floor(maxTurnSeconds * rate);
    this.#probedTo = this.#floor = this.#quietFrom = buffer.end;
  }

  get speaking(): boolean {
    return this.#speechStart !== undefined;
  }

  /** The earliest audio the detector may still need (context for the next probe). */
  get oldestNeeded(): number {
    return Math.max(this.#floor, this.#probedTo - this.#ms(CONTEXT_MS)) - this.#ms(this.#vad.prefixPaddingMs);
  }

  /**
   * While speech goes on, how far the audio surely belongs to its turn, examined or not: a turn ends
   * no earlier than the last speech heard plus the silence window, nor than its longest. A live
   * turn's engine can hear that far as the audio arrives, so that at the turn's end only what the
   * last probe examined is left to it; no audio past the turn's end is ever in it.
   */
  get turnSurelyTo(): number | undefined {
    if (this.#speechStart === undefined) return undefined;
    return Math.min(
      this.#lastSpeechEnd + this.#ms(this.#vad.silenceDurationMs),
      this.#speechStart + this.#maxTurn,
    );
  }

  /** Samples appended and not yet examined. */
  get unexamined(): number {
    return this.#buffer.end - this.#probedTo;
  }

  /** Resolves when the probe in flight, if any, has ended. */
  settled(): Promise<void> {
    return this.#inFlight;
  }

  /** Audio was appended: probes if enough is waiting. */
  update(): void {
    if (this.#probing || this.#stopped) return;
    const end = this.#buffer.end;
    const waiting = end - this.#probedTo;
    if (waiting <= 0) return;
    const silenceEnds =
      this.#speechStart !== undefined && end >= this.#lastSpeechEnd + this.#ms(this.#vad.silenceDurationMs);
    const turnFull = this.#speechStart !== undefined && end - this.#speechStart >= this.#maxTurn;
    const silenceMs = this.#vad.silenceDurationMs;
    const step =
      this.#speechStart !== undefined && silenceMs <= PROBE_STEP_MS
        ? Math.max(MIN_TURN_STEP_MS, silenceMs / 3)
        : PROBE_STEP_MS;
    if (waiting >= this.#ms(step) || silenceEnds || turnFull)
      void this.#run(Math.min(end, this.#probedTo + this.#ms(MAX_WINDOW_MS)));
  }

  /** The buffer was cleared: a turn in progress is forgotten; detection goes on from here. */
  reset(): void {
    this.#speechStart = undefined;
    this.#probedTo = this.#floor = this.#quietFrom = this.#buffer.end;
  }

  /**
   * The stream ended: examines the audio still waiting (after the probe in flight), then ends a turn
   * in progress where its speech did, at the end of the audio. Rejects with the probe's error.
   */
  async finish(): Promise<void> {
    for (;;) {
      // A probe that ends may start the next one (update): one at a time, always.
      while (this.#probing) await this.#inFlight;
      if (this.#stopped || this.#probedTo >= this.#buffer.end) break;
      await this.#run(Math.min(this.#buffer.end, this.#probedTo + this.#ms(MAX_WINDOW_MS)), true);
    }
    if (this.#stopped) return;
    this.#stopped = true;
    if (this.#speechStart !== undefined) this.#stop(this.#lastSpeechEnd, this.#buffer.end);
  }

  /** Stops probing for good (the session ended or turned server VAD off). */
  stop(): void {
    this.#stopped = true;
  }

  #ms(ms: number): number {
    return Math.round((ms * this.#rate) / 1000);
  }

  #run(to: number, finishing = false): Promise<void> {
    this.#inFlight = this.#probeTo(to, finishing);
    return this.#inFlight;
  }

  async #probeTo(to: number, finishing: boolean): Promise<void> {
    this.#probing = true;
    const from = Math.max(this.#floor, this.#probedTo - this.#ms(CONTEXT_MS));
    try {
      const spans = await this.#probe(this.#buffer.slice(from, to), this.#vad.threshold);
      this.#failing = false;
      if (!this.#stopped) this.#advance(from, to, spans);
    } catch (err) {
      this.#probing = false;
      if (finishing) throw err;
      if (this.#stopped) return;
      if (!this.#failing) this.#events.failed(err);
      this.#failing = true;
      // Tried again at the next append, not at once: a model that keeps failing is not spun on.
      return;
    }
    this.#probing = false;
    // Audio that arrived during the probe may already be due.
    this.update();
  }

  /** Walks a probe's spans in order: turns end where their silence window does, even mid-window. */
  #advance(from: number, to: number, spans: { start: number; end: number }[]): void {
    const silence = this.#ms(this.#vad.silenceDurationMs);
    for (const span of spans) {
      const start = Math.max(this.#floor, from + Math.round(span.start * this.#rate));
      const end = from + Math.round(span.end * this.#rate);
      if (end <= start) continue;
      if (this.#speechStart !== undefined && start - this.#lastSpeechEnd >= silence)
        this.#stop(this.#lastSpeechEnd, this.#lastSpeechEnd + silence);
      if (this.#speechStart === undefined) {
        this.#quietUntil(start);
        this.#speechStart = start;
        this.#lastSpeechEnd = end;
        this.#events.started(start);
      } else this.#lastSpeechEnd = Math.max(this.#lastSpeechEnd, end);
    }
    this.#probedTo = to;
    if (this.#speechStart !== undefined) {
      if (to - this.#lastSpeechEnd >= silence) this.#stop(this.#lastSpeechEnd, this.#lastSpeechEnd + silence);
      else if (to - this.#speechStart >= this.#maxTurn) this.#stop(to, to);
      else {
        this.#events.examined(to);
        return;
      }
    }
    this.#quietUntil(to);
  }

  #stop(position: number, at: number): void {
    this.#speechStart = undefined;
    this.#floor = this.#quietFrom = at;
    this.#events.stopped(position, at);
  }

  /** Reports each idle timeout's worth of quiet audio before `position`. */
  #quietUntil(position: number): void {
    const idle = this.#ms(this.#vad.idleTimeoutMs);
    if (idle <= 0) return;
    while (position - this.#quietFrom >= idle) {
      const from = this.#quietFrom;
      this.#floor = this.#quietFrom = from + idle;
      this.#events.idle(from, from + idle);
    }
  }
}
