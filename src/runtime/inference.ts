/**
 * The request path: a request's admission on its model (FIFO, with its busy timeout), the model's
 * load if it is not ready, the run on a session under the max_inference_ms watchdog with its input
 * audio conformed to the engine's format, and the metrics and trace of its wait and outcome.
 */
import { conformAudioAsync } from '../audio/audio-pool.js';
import { conformPieces } from '../audio/convert.js';
import { type Audio, durationMs } from '../audio/types.js';
import type { ServerConfig } from '../config/types.js';
import { EngineCrashed, EngineRestarted } from '../engines/engine-worker.js';
import type { AudioFormat, EngineEvent, EngineRequest, EngineResult, RunContext } from '../engines/types.js';
import { VoxdError } from '../errors.js';
import type { Metrics } from '../observability/metrics.js';
import { traceOf } from '../observability/request-trace.js';
import type { Clock, Timer } from '../util/clock.js';
import { type AbortSource, LazyAbort } from '../util/lazy-abort.js';
import { untilAborted } from '../util/until-aborted.js';
import { effectiveBusyTimeout } from './busy-timeout.js';
import { engineFailure, type ModelEntry } from './model-entry.js';
import { retireCrashed } from './reconfiguration.js';

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
async function collect(pieces: AsyncIterable<Audio>, need: AudioFormat): Promise<Audio> {
  const parts: Audio[] = [];
  for await (const piece of pieces) parts.push(piece);
  const first = parts[0];
  if (!first) return { samples: new Float32Array(0), sampleRate: need.sampleRate, channels: need.channels };
  const samples = new Float32Array(parts.reduce((n, p) => n + p.samples.length, 0));
  let at = 0;
  for (const part of parts) {
    samples.set(part.samples, at);
    at += part.samples.length;
  }
  return conformAudioAsync({ samples, sampleRate: first.sampleRate, channels: first.channels }, need);
}

/** A request's place on a model: one lease, for one run. */
export interface Admission {
  /** Runs the request on a session (loading the model first if needed). */
  run(
    request: EngineRequest,
    options: Pick<InferenceOptions, 'signal' | 'onEvent' | 'eventsOnly'>,
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
    const entry = this.#entry(id);
    let lease = entry.scheduler.tryAcquire('request', options.signal);
    if (lease) this.#waited(entry, options.signal, 0);
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
      this.#waited(entry, options.signal, performance.now() - asked);
      return lease;
    } catch (err) {
      this.#metrics?.outcome(entry.id, entry.config.task, options.signal.aborted ? 'cancelled' : 'rejected');
      throw err;
    }
  }

  #waited(entry: ModelEntry, signal: InferenceOptions['signal'], ms: number): void {
    this.#metrics?.queueWait(entry.id, ms / 1000);
    const trace = traceOf(signal);
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
   * One run on a session. The engine's signal is the run's own controller, aborted when the client
   * goes away, when a shutdown cancels the running requests (cancelAll), or past
   * max_inference_ms. It is built by hand rather than with AbortSignal.any and AbortSignal.timeout:
   * on Node 20 each AbortSignal costs several microseconds to make (AbortSignal.any adds a WeakRef
   * and a FinalizationRegistry entry, AbortSignal.timeout a second signal), and this path runs
   * thousands of times a second. The shutdown reaches the run through #running, not a listener.
   */
  async #run(
    entry: ModelEntry,
    request: EngineRequest,
    options: Pick<InferenceOptions, 'signal' | 'onEvent' | 'eventsOnly'>,
  ): Promise<InferenceOutcome> {
    const maxMs = entry.config.max_inference_ms ?? this.#config.max_inference_ms;
    const client = options.signal;
    // The engine's signal is made only when the engine reads it (the fixture's no-op run does not).
    const run = new LazyAbort();
    const onClientAbort = () => run.abort(client.reason);
    let watchdog: Timer | undefined;
    let overran: VoxdError | undefined;
    if (client.aborted) run.abort(client.reason);
    else if (this.#cancel.signal.aborted) run.abort(this.#cancel.signal.reason);
    else {
      client.addEventListener('abort', onClientAbort, { once: true });
      this.#running.add(run);
    }
    // Armed once the pool is ready, not before: a cold load (after an eviction, an idle retirement,
    // a reconfiguration) is not inference, and a load slower than max_inference_ms would otherwise
    // answer the first request after it 504 without having run anything.
    const arm = () => {
      if (maxMs <= 0 || run.aborted) return;
      watchdog = this.#clock.after(
        maxMs,
        () => {
          // The watchdog aborts with the 504 itself, so whoever hears the abort (another request
          // on a shared runner, say) is told what happened.
          overran = new VoxdError(
            'E_INFERENCE_TIMEOUT',
            `model '${entry.config.id}': the request ran past max_inference_ms=${maxMs} and was cancelled`,
          );
          run.abort(overran);
        },
        { unref: true },
      );
    };
    // Whether the outcome was counted: a run's own failure is, a failed load before it is not yet.
    let counted = false;
    try {
      // A ready pool is taken without the hop through ensureReady's promise.
      const state = entry.state;
      const pool = state.kind === 'ready' ? state.pool : await entry.ensureReady(run.signal);
      arm();
      const { session, slot, checkin } = entry.checkout(pool);
      const started = performance.now();
      entry.touch();
      try {
        // An engine told to keep only events returns no audio: its length, for the metrics, is
        // what its events carried.
        let eventAudioMs = 0;
        const onEvent =
          options.eventsOnly && options.onEvent
            ? (event: EngineEvent) => {
                if (event.type === 'audio') eventAudioMs += durationMs(event.audio);
                return options.onEvent!(event);
              }
            : options.onEvent;
        const context: RunContext = {
          get signal() {
            return run.signal;
          },
          onEvent,
          eventsOnly: options.eventsOnly,
        };
        const need = pool.weights.audioInput;
        let result: EngineResult;
        if (request.liveAudio) {
          // A live input fed from outside wakes its reader when the run is cancelled (client gone,
          // shutdown, max_inference_ms), whatever the feeder does.
          const live = untilAborted(request.liveAudio, run.signal);
          result = session.runLive
            ? await session.runLive({ ...request, liveAudio: conformPieces(live, need) }, context)
            : await session.run(
                { ...request, liveAudio: undefined, audio: await collect(live, need) },
                context,
              );
        } else {
          const prepared = request.audio
            ? { ...request, audio: await conformAudioAsync(request.audio, need) }
            : request;
          result = await session.run(prepared, context);
        }
        const wallMs = performance.now() - started;
        this.#ran(entry, request, result, wallMs, slot, client, eventAudioMs);
        return {
          result,
          wallMs,
          slot,
          generation: pool.generation,
          inputSampleRate: pool.weights.audioInput.sampleRate,
        };
      } catch (err) {
        counted = true;
        this.#metrics?.outcome(entry.id, entry.config.task, run.aborted && !overran ? 'cancelled' : 'error');
        if (overran && !client.aborted) throw overran;
        if (run.aborted) throw run.reason;
        if (err instanceof EngineCrashed) {
          this.#metrics?.runnerRestarted(entry.id);
          retireCrashed(entry, err.message);
        }
        if (err instanceof EngineRestarted) {
          // Every call lost with a shared runner hears of it; the first one counts the restart.
          if (err.firstOfRunner) this.#metrics?.runnerRestarted(entry.id);
          if (err.crashed) retireCrashed(entry, err.message);
          throw new VoxdError(
            'E_ENGINE_RESTARTED',
            `model '${entry.config.id}': ${err.message}; this request was lost with it and can be retried`,
            { cause: err },
          );
        }
        throw engineFailure(`model '${entry.config.id}' failed`, err);
      } finally {
        checkin();
        entry.touch();
      }
    } catch (err) {
      if (!counted) this.#metrics?.outcome(entry.id, entry.config.task, run.aborted ? 'cancelled' : 'error');
      throw err;
    } finally {
      client.removeEventListener('abort', onClientAbort);
      this.#running.delete(run);
      watchdog?.cancel();
    }
  }

  /** A finished run: its metrics, and the slot and run time on the request's trace. */
  #ran(
    entry: ModelEntry,
    request: EngineRequest,
    result: EngineResult,
    wallMs: number,
    slot: number,
    signal: InferenceOptions['signal'],
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
    const trace = traceOf(signal);
    if (trace) {
      trace.model = entry.id;
      trace.slot = slot;
      trace.inferenceMs = (trace.inferenceMs ?? 0) + wallMs;
    }
  }

  /** Aborts every running request with `reason`, and each one started from now on. */
  cancelAll(reason: VoxdError): void {
    this.#cancel.abort(reason);
    for (const run of this.#running) run.abort(reason);
  }
}
