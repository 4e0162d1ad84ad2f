/**
 * The request path: a request's admission on its model (FIFO, with its busy timeout), the model's
 * load if it is not ready, the run on a session under the max_inference_ms watchdog with its input
 * audio conformed to the engine's format, and the metrics and trace of its wait and outcome.
 */
import { conformAudioAsync } from '../audio/audio-pool.js';
import { conformPieces } from '../audio/convert.js';
import { joinAudio } from '../audio/pcm16-audio.js';
import { type Audio, durationMs } from '../audio/types.js';
import type { ServerConfig } from '../config/types.js';
import { EngineCrashed, EngineRestarted } from '../engines/engine-worker.js';
import type {
  AudioFormat,
  EngineEvent,
  EngineRequest,
  EngineResult,
  EngineSession,
  RunContext,
} from '../engines/types.js';
import { VoxdError } from '../errors.js';
import type { Metrics } from '../observability/metrics.js';
import type { RequestTrace } from '../observability/request-trace.js';
import type { Clock } from '../util/clock.js';
import type { AbortSource, LazyAbort } from '../util/lazy-abort.js';
import { untilAborted } from '../util/until-aborted.js';
import { effectiveBusyTimeout } from './busy-timeout.js';
import { engineFailure, type ModelEntry } from './model-entry.js';
import type { Pool } from './model-state.js';
import { retireCrashed } from './reconfiguration.js';
import { RunGuard } from './run-guard.js';

export interface InferenceOptions {
  /** The request's busy_timeout_ms, if it sent one. */
  busyTimeoutMs?: number;
  /**
   * The caller going away: an AbortSignal, or a request's LazyAbort (the engine gets a signal of the
   * run's own either way).
   */
  signal: AbortSource;
  /** Incremental output; see RunContext.onEvent (the engine waits on its promise). */
  onEvent?: (event: EngineEvent) => void | Promise<void>;
  /** See RunContext.eventsOnly. */
  eventsOnly?: boolean;
  /** Told the model, slot, queue wait and run time, for the request's log line. */
  trace?: RequestTrace;
}

export interface InferenceOutcome {
  result: EngineResult;
  wallMs: number;
  slot: number;
  generation: number;
  /** The rate input audio was converted to: sample positions in the result count at this rate. */
  inputSampleRate: number;
}

/**
 * All of a live input, for an engine that can only take audio whole: the pieces as the client sent
 * them, joined, then converted once, exactly as an uploaded file is (converting piece by piece
 * would round each piece's length and filter each edge as if silence lay beyond it).
 */
async function collect(pieces: AsyncIterable<Audio>, need: AudioFormat, signal: AbortSource): Promise<Audio> {
  const parts: Audio[] = [];
  for await (const piece of pieces) parts.push(piece);
  const whole = joinAudio(parts) ?? {
    samples: new Float32Array(0),
    sampleRate: need.sampleRate,
    channels: need.channels,
  };
  return conformAudioAsync(whole, need, signal);
}

/**
 * Runs `request` on `session` with its input audio in the engine's format (`need`). A conversion
 * long enough for the audio pool leaves its queue, never run, when the run is cancelled first.
 */
async function runConformed(
  session: EngineSession,
  request: EngineRequest,
  context: RunContext,
  need: AudioFormat,
  run: LazyAbort,
): Promise<EngineResult> {
  if (request.liveAudio) {
    // A live input fed from outside wakes its reader when the run is cancelled (client gone,
    // shutdown, max_inference_ms), whatever the feeder does.
    const live = untilAborted(request.liveAudio, run.signal);
    return session.runLive
      ? session.runLive({ ...request, liveAudio: conformPieces(live, need) }, context)
      : session.run({ ...request, liveAudio: undefined, audio: await collect(live, need, run) }, context);
  }
  const prepared = request.audio
    ? { ...request, audio: await conformAudioAsync(request.audio, need, run) }
    : request;
  return session.run(prepared, context);
}

/** A request's place on a model: one lease, for one run. */
export interface Admission {
  /** Runs the request on a session (loading the model first if needed). */
  run(
    request: EngineRequest,
    options: Pick<InferenceOptions, 'signal' | 'onEvent' | 'eventsOnly' | 'trace'>,
  ): Promise<InferenceOutcome>;
  /** Gives the lease back; idempotent. */
  release(): void;
}

export interface InferenceDeps {
  /** The server's busy_timeout_ms and max_inference_ms, for models that set none of their own. */
  config: Pick<ServerConfig, 'busy_timeout_ms' | 'max_inference_ms'>;
  clock: Clock;
  metrics: Metrics | undefined;
  /** The registered model of that id; throws 404 for an unknown one. */
  entry(id: string): ModelEntry;
  /** Throws E_SHUTTING_DOWN once a shutdown began. */
  refuseWhenClosing(): void;
}

export class Inference {
  readonly #config: InferenceDeps['config'];
  readonly #clock: Clock;
  readonly #metrics: Metrics | undefined;
  readonly #entry: (id: string) => ModelEntry;
  readonly #refuseWhenClosing: () => void;
  /** Aborted when a shutdown gives up on running requests, as is each run in #running. */
  readonly #cancel = new AbortController();
  /** The controllers of the runs in progress (see #run); cancelAll aborts each. */
  readonly #running = new Set<LazyAbort>();

  constructor(deps: InferenceDeps) {
    this.#config = deps.config;
    this.#clock = deps.clock;
    this.#metrics = deps.metrics;
    this.#entry = deps.entry;
    this.#refuseWhenClosing = deps.refuseWhenClosing;
  }

  /** Runs one request on one session of the model, loading it first if needed. */
  async infer(id: string, request: EngineRequest, options: InferenceOptions): Promise<InferenceOutcome> {
    // admit() and run() inline, without an Admission between them: this runs on every request.
    this.#refuseWhenClosing();
    options.trace?.prepared();
    const entry = this.#entry(id);
    let lease = entry.scheduler.tryAcquire('request', options.signal);
    if (lease) this.#waited(entry, options.trace, 0);
    else lease = await this.#acquire(entry, options);
    try {
      return await this.#run(entry, request, options);
    } finally {
      lease.release();
    }
  }

  /**
   * Takes a request lease on the model (FIFO, with the busy timeout) without running anything yet,
   * so a streaming route can hold its place from before its headers go out until its last byte is
   * written. The caller must release it on every path.
   */
  async admit(id: string, options: InferenceOptions): Promise<Admission> {
    this.#refuseWhenClosing();
    options.trace?.prepared();
    const entry = this.#entry(id);
    const lease = await this.#acquire(entry, options);
    return {
      run: (request, runOptions) => this.#run(entry, request, runOptions),
      release: () => lease.release(),
    };
  }

  /** Waits for a request lease, timing the wait; a request sent away is counted as rejected. */
  async #acquire(entry: ModelEntry, options: InferenceOptions) {
    const asked = performance.now();
    try {
      const lease = await entry.scheduler.acquire('request', {
        timeoutMs: this.#busyTimeoutOf(entry, options),
        signal: options.signal,
      });
      this.#waited(entry, options.trace, performance.now() - asked);
      return lease;
    } catch (err) {
      this.#metrics?.outcome(entry.id, entry.config.task, options.signal.aborted ? 'cancelled' : 'rejected');
      throw err;
    }
  }

  #waited(entry: ModelEntry, trace: RequestTrace | undefined, ms: number): void {
    this.#metrics?.queueWait(entry.id, ms / 1000);
    if (trace) {
      trace.model = entry.id;
      trace.queueMs = ms;
    }
  }

  /** The request's wait limit: its busy_timeout_ms under the model's (else the server's) ceiling. */
  #busyTimeoutOf(entry: ModelEntry, options: InferenceOptions): number {
    const ceiling = entry.config.busy_timeout_ms ?? this.#config.busy_timeout_ms;
    return effectiveBusyTimeout(options.busyTimeoutMs, ceiling);
  }

  /**
   * One run on a session: the model made ready, the watchdog armed, a session checked out for the
   * run and back in after it. The engine's signal is the run's own (run-guard.ts).
   */
  async #run(
    entry: ModelEntry,
    request: EngineRequest,
    options: Pick<InferenceOptions, 'signal' | 'onEvent' | 'eventsOnly' | 'trace'>,
  ): Promise<InferenceOutcome> {
    const guard = new RunGuard(options.signal, this.#cancel.signal, this.#running);
    // Whether the outcome was counted: a run's own failure is, a failed load before it is not yet.
    let counted = false;
    try {
      // A ready pool is taken without the hop through ensureReady's promise.
      const state = entry.state;
      const pool = state.kind === 'ready' ? state.pool : await entry.ensureReady(guard.run.signal);
      guard.arm(this.#clock, entry.config.max_inference_ms ?? this.#config.max_inference_ms, entry.config.id);
      const checkout = entry.checkout(pool);
      try {
        return await this.#onSession(entry, pool, checkout, request, options, guard);
      } catch (err) {
        counted = true;
        throw this.#runFailed(entry, err, guard, options.signal);
      } finally {
        checkout.checkin();
        entry.touch();
      }
    } catch (err) {
      if (!counted)
        this.#metrics?.outcome(entry.id, entry.config.task, guard.run.aborted ? 'cancelled' : 'error');
      throw err;
    } finally {
      guard.close();
    }
  }

  /** The run itself, on a checked-out session: input conformed, engine called, outcome counted. */
  async #onSession(
    entry: ModelEntry,
    pool: Pool,
    { session, slot }: ReturnType<ModelEntry['checkout']>,
    request: EngineRequest,
    options: Pick<InferenceOptions, 'signal' | 'onEvent' | 'eventsOnly' | 'trace'>,
    guard: RunGuard,
  ): Promise<InferenceOutcome> {
    const started = performance.now();
    entry.touch();
    // An engine told to keep only events returns no audio: its length, for the metrics, is what
    // its events carried.
    let eventAudioMs = 0;
    const onEvent =
      options.eventsOnly && options.onEvent
        ? (event: EngineEvent) => {
            if (event.type === 'audio') eventAudioMs += durationMs(event.audio);
            return options.onEvent!(event);
          }
        : options.onEvent;
    const run = guard.run;
    const context: RunContext = {
      get signal() {
        return run.signal;
      },
      onEvent,
      eventsOnly: options.eventsOnly,
    };
    const result = await runConformed(session, request, context, pool.weights.audioInput, run);
    const wallMs = performance.now() - started;
    this.#ran(entry, request, result, wallMs, slot, options.trace, eventAudioMs);
    return {
      result,
      wallMs,
      slot,
      generation: pool.generation,
      inputSampleRate: pool.weights.audioInput.sampleRate,
    };
  }

  /** Counts a failed run and gives the error its caller hears. */
  #runFailed(entry: ModelEntry, err: unknown, guard: RunGuard, client: AbortSource): unknown {
    const { run, overran } = guard;
    this.#metrics?.outcome(entry.id, entry.config.task, run.aborted && !overran ? 'cancelled' : 'error');
    if (overran && !client.aborted) return overran;
    if (run.aborted) return run.reason;
    if (err instanceof EngineCrashed) {
      this.#metrics?.runnerRestarted(entry.id);
      retireCrashed(entry, err.message);
    }
    if (err instanceof EngineRestarted) {
      // Every call lost with a shared runner hears of it; the first one counts the restart.
      if (err.firstOfRunner) this.#metrics?.runnerRestarted(entry.id);
      if (err.crashed) retireCrashed(entry, err.message);
      return new VoxdError(
        'E_ENGINE_RESTARTED',
        `model '${entry.config.id}': ${err.message}; this request was lost with it and can be retried`,
        { cause: err },
      );
    }
    return engineFailure(`model '${entry.config.id}' failed`, err);
  }

  /** A finished run: its metrics, and the slot and run time on the request's trace. */
  #ran(
    entry: ModelEntry,
    request: EngineRequest,
    result: EngineResult,
    wallMs: number,
    slot: number,
    trace: RequestTrace | undefined,
    eventAudioMs: number,
  ): void {
    const audio = result.audio ?? request.audio;
    const audioMs = audio ? durationMs(audio) : eventAudioMs > 0 ? eventAudioMs : undefined;
    this.#metrics?.ran(
      entry.id,
      entry.config.task,
      wallMs / 1000,
      audioMs === undefined ? undefined : audioMs / 1000,
    );
    if (trace) {
      trace.model = entry.id;
      trace.slot = slot;
      trace.inferenceMs = (trace.inferenceMs ?? 0) + wallMs;
      trace.ranAt = performance.now();
    }
  }

  /** Aborts every running request with `reason`, and each one started from now on. */
  cancelAll(reason: VoxdError): void {
    this.#cancel.abort(reason);
    for (const run of this.#running) run.abort(reason);
  }
}
