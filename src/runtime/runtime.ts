/**
 * The runtime facade: the registry of model entries and every operation on them (inference,
 * registration, unload, bulk unload, status, shutdown). Engine- and transport-agnostic.
 *
 * The serial runtime (default) and the parallel runtime (`--parallel-jobs`) share this code: the
 * serial one is the same scheduler with one slot per model, rejects `slots`, hides the slot fields
 * from status and lists only models it actually unloaded in bulk results.
 */

import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { conformAudioAsync } from '../audio/audio-pool.js';
import { conformPieces } from '../audio/convert.js';
import { type Audio, durationMs } from '../audio/types.js';
import type { ModelConfig, ModelIsolation, ServerConfig, TaskToken } from '../config/types.js';
import type { EngineCatalog } from '../engines/catalog.js';
import { EngineCrashed, EngineRestarted } from '../engines/engine-worker.js';
import type {
  AudioFormat,
  EngineEvent,
  EngineFamily,
  EngineRequest,
  EngineResult,
  LoadedModel,
  RunContext,
} from '../engines/types.js';
import { invalidRequest, unknownModel, VoxdError } from '../errors.js';
import { PACKAGE_ID } from '../models/catalog.js';
import type { Installer } from '../models/installer.js';
import type { ModelsRoot } from '../models/models-root.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics, ModelSample } from '../observability/metrics.js';
import { traceOf } from '../observability/request-trace.js';
import { type Clock, systemClock, type Timer } from '../util/clock.js';
import { type AbortSource, LazyAbort } from '../util/lazy-abort.js';
import { effectiveBusyTimeout } from './busy-timeout.js';
import { systemFreeMemoryMb } from './memory.js';
import { type EntryContext, engineFailure, isolationOf, loadSpecOf, ModelEntry } from './model-entry.js';
import { Residency } from './residency.js';
import { TEARDOWN_GRACE_MS } from './shutdown-timing.js';
import { type ResolvedPreset, resolvePresets } from './voice-presets.js';

/** How long past its deadline a shutdown waits for engines' teardown before it ends without them. */
const MIB = 1024 * 1024;

export interface RuntimeDeps {
  catalog: EngineCatalog;
  /** Installed model packages and their installer. */
  modelsRoot: ModelsRoot<Installer>;
  clock?: Clock;
  /** Free memory in MiB; tests replace it to drive the memory guard. */
  freeMemoryMb?: () => Promise<number>;
  log?: (message: string) => void;
  /** Where runs, waits and outcomes are counted. */
  metrics?: Metrics;
  /** Model loads and unloads are logged here, with the model id as a field. */
  logger?: Logger;
}

export interface InferenceOptions {
  /** The request's busy_timeout_ms, if it sent one. */
  busyTimeoutMs?: number;
  /**
   * The caller going away: an AbortSignal, or a request's LazyAbort (the engine gets a signal of the
   * run's own either way).
   */
  signal: AbortSource;
  onEvent?: (event: EngineEvent) => void;
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
    options: Pick<InferenceOptions, 'signal' | 'onEvent'>,
  ): Promise<InferenceOutcome>;
  /** Gives the lease back; idempotent. */
  release(): void;
}

export interface ModelStatus {
  id: string;
  family: string;
  task: string;
  mode: string;
  path: string;
  loaded: boolean;
  state: string;
  /** Why the model was last unloaded by a fault (its engine crashed); gone once it loads again. */
  last_error?: string;
  slots?: number;
  active_slots?: number;
  queued_requests?: number;
  max_parallel_slots?: number | null;
  /** How the slots share the engine: "model" (one shared runner and weights) or "session". */
  isolation: ModelIsolation;
  /** The memory the last load was estimated to take, in MiB (weights once per copy, plus runners); null before a load or when unknown. */
  memory_estimate_mb: number | null;
  session_options: Record<string, string>;
}

export class Runtime {
  readonly config: ServerConfig;
  readonly catalog: EngineCatalog;
  readonly residency: Residency;
  readonly modelsRoot: ModelsRoot<Installer>;
  readonly #entries = new Map<string, ModelEntry>();
  readonly #clock: Clock;
  readonly #log: (message: string) => void;
  readonly #metrics: Metrics | undefined;
  readonly #shutdown = new AbortController();
  /** Aborted when a shutdown gives up on running requests, as is each run in #running. */
  readonly #cancel = new AbortController();
  /** The controllers of the runs in progress (see #run); cancelRunning aborts each. */
  readonly #running = new Set<LazyAbort>();
  readonly #entryContext: EntryContext;
  #closing: Promise<void> | undefined;

  constructor(config: ServerConfig, deps: RuntimeDeps) {
    this.config = config;
    this.catalog = deps.catalog;
    this.modelsRoot = deps.modelsRoot;
    this.#clock = deps.clock ?? systemClock;
    this.#metrics = deps.metrics;
    this.#log = deps.log ?? ((message) => process.stderr.write(`[voxd] ${message}\n`));
    this.residency = new Residency({
      maxLoadedModels: config.max_loaded_models,
      minFreeMemoryMb: config.min_free_memory_mb,
      idleUnloadMs: config.idle_unload_ms,
      clock: this.#clock,
      freeMemoryMb: deps.freeMemoryMb ?? systemFreeMemoryMb,
      entries: () => this.#entries.values(),
      log: this.#log,
      shutdownSignal: this.#shutdown.signal,
    });
    this.#entryContext = {
      clock: this.#clock,
      backend: 'cpu',
      device: config.device,
      threads: config.threads,
      maxQueuedRequests: config.max_queued_requests,
      admitLoad: (entry, build) => this.residency.admitLoad(entry, build),
      shutdownSignal: this.#shutdown.signal,
      warn: this.#log,
      event: deps.logger ? (fields, message) => deps.logger!.info(fields, message) : undefined,
    };
  }

  /**
   * The clock every deadline of this server runs on (the one startVoxd was given), for the HTTP
   * routes' own deadlines and times (the live body's timeouts), so that a test's clock moves them too.
   */
  get clock(): Clock {
    return this.#clock;
  }

  get parallel(): boolean {
    return this.config.parallel_jobs;
  }

  /** Registers the configured models and loads the eager ones; a failed eager load aborts startup. */
  async start(): Promise<void> {
    for (const entryConfig of this.config.models) {
      const model = await this.#withPackage(entryConfig);
      this.#checkTask(model);
      const entry = new ModelEntry(
        model,
        this.#family(model),
        await resolvePresets(model),
        this.#entryContext,
      );
      this.#entries.set(model.id, entry);
    }
    const eager = this.config.models.filter((m) => !m.lazy);
    const limit = this.config.max_loaded_models;
    const now = limit > 0 ? eager.slice(0, limit) : eager;
    for (const deferred of eager.slice(now.length)) {
      this.#log(
        `model '${deferred.id}' not loaded at startup: max_loaded_models=${limit}; it loads on first use`,
      );
    }
    for (const model of now) {
      const entry = this.#entries.get(model.id)!;
      const lease = await entry.scheduler.acquire('manager', { timeoutMs: 0 });
      await entry.manage(lease, 'registering', () => entry.ensureReady());
    }
    this.residency.startIdleTimer();
  }

  get(id: string): ModelEntry {
    const entry = this.#entries.get(id);
    if (!entry) throw unknownModel(id);
    return entry;
  }

  has(id: string): boolean {
    return this.#entries.has(id);
  }

  /**
   * The model a request names: a registered one, or else a package installed in the models root
   * under that id, which is registered (lazily, its family and task from the package) and loaded
   * on first use, as `ollama run` uses a pulled model by name. Unknown: 404.
   */
  async resolve(id: string): Promise<ModelEntry> {
    const known = this.#entries.get(id);
    if (known) return known;
    // Only an id that can be a package, with a folder of that name, is looked up: a request naming
    // an unknown model must not make the server scan the models root.
    if (!PACKAGE_ID.test(id)) throw unknownModel(id);
    const folder = await stat(join(this.modelsRoot.root, id)).catch(() => undefined);
    if (!folder?.isDirectory()) throw unknownModel(id);
    const installed = (await this.modelsRoot.installer.list()).find((p) => p.id === id);
    // Registered meanwhile (by a concurrent request for the same package, say).
    const raced = this.#entries.get(id);
    if (raced) return raced;
    if (!installed) throw unknownModel(id);
    await this.register({
      id,
      family: installed.family,
      path: installed.path,
      task: installed.task as TaskToken,
      mode: 'offline',
      lazy: true,
      load_options: {},
      session_options: {},
      default_request_options: {},
      voice_presets: {},
    });
    return this.get(id);
  }

  get size(): number {
    return this.#entries.size;
  }

  /** Runs one request on one session of the model, loading it first if needed. */
  async infer(id: string, request: EngineRequest, options: InferenceOptions): Promise<InferenceOutcome> {
    // admit() and run() inline, without an Admission between them: this runs on every request.
    this.#refuseWhenClosing();
    const entry = this.get(id);
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
    const entry = this.get(id);
    const lease = await this.#acquire(entry, options);
    return {
      run: (request, runOptions) => this.#run(entry, request, runOptions),
      release: () => lease.release(),
    };
  }

  /**
   * Refuses at once (E_QUEUE_FULL) when `places` more requests for the model would pass its
   * max_queued_requests. A route that answers before it takes its lease (a serial stream sends its
   * headers first) or takes several at once (a batch) asks here; admit() and infer() check anyway.
   */
  checkQueueRoom(id: string, places = 1): void {
    this.get(id).scheduler.checkRoom(places);
  }

  /**
   * True while every loaded model's queue is saturated (at its bound, not yet drained to its low
   * mark); false with no model loaded, and whenever a loaded model has no bound.
   */
  get saturated(): boolean {
    let loaded = 0;
    for (const entry of this.#entries.values()) {
      if (!entry.loaded) continue;
      if (!entry.scheduler.bound.saturated) return false;
      loaded++;
    }
    return loaded > 0;
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
    const ceiling = entry.config.busy_timeout_ms ?? this.config.busy_timeout_ms;
    return effectiveBusyTimeout(options.busyTimeoutMs, ceiling);
  }

  /**
   * One run on a session. The engine's signal is the run's own controller, aborted when the client
   * goes away, when a shutdown cancels the running requests (cancelRunning), or past
   * max_inference_ms. It is built by hand rather than with AbortSignal.any and AbortSignal.timeout:
   * on Node 20 each AbortSignal costs several microseconds to make (AbortSignal.any adds a WeakRef
   * and a FinalizationRegistry entry, AbortSignal.timeout a second signal), and this path runs
   * thousands of times a second. The shutdown reaches the run through #running, not a listener.
   */
  async #run(
    entry: ModelEntry,
    request: EngineRequest,
    options: Pick<InferenceOptions, 'signal' | 'onEvent'>,
  ): Promise<InferenceOutcome> {
    const maxMs = entry.config.max_inference_ms ?? this.config.max_inference_ms;
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
        const context: RunContext = {
          get signal() {
            return run.signal;
          },
          onEvent: options.onEvent,
        };
        const need = pool.weights.audioInput;
        let result: EngineResult;
        if (request.liveAudio) {
          result = session.runLive
            ? await session.runLive(
                { ...request, liveAudio: conformPieces(request.liveAudio, need) },
                context,
              )
            : await session.run(
                { ...request, liveAudio: undefined, audio: await collect(request.liveAudio, need) },
                context,
              );
        } else {
          const prepared = request.audio
            ? { ...request, audio: await conformAudioAsync(request.audio, need) }
            : request;
          result = await session.run(prepared, context);
        }
        const wallMs = performance.now() - started;
        this.#ran(entry, request, result, wallMs, slot, client);
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
          this.#retireCrashed(entry, err.message);
        }
        if (err instanceof EngineRestarted) {
          // Every call lost with a shared runner hears of it; the first one counts the restart.
          if (err.firstOfRunner) this.#metrics?.runnerRestarted(entry.id);
          if (err.crashed) this.#retireCrashed(entry, err.message);
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

  /**
   * Registers a new id or reconfigures an existing one. The replacement is validated privately
   * before any lease is taken; a new entry is published once, under its own manager lease, before
   * its first load, so concurrent registrations of the same id queue on it.
   */
  async register(
    config: ModelConfig,
    signal?: AbortSignal,
  ): Promise<{ id: string; loaded: true; reconfigured: boolean }> {
    this.#refuseWhenClosing();
    config = await this.#withPackage(config);
    this.#checkTask(config);
    const family = this.#family(config);
    const presets = await resolvePresets(config);
    // A shutdown may have begun while the presets were read: it would not see this registration.
    this.#refuseWhenClosing();
    const existing = this.#entries.get(config.id);
    if (!existing) {
      const entry = new ModelEntry(config, family, presets, this.#entryContext);
      const lease = entry.scheduler.tryAcquireManager()!;
      this.#entries.set(config.id, entry);
      await entry.manage(lease, 'registering', () => entry.ensureReady());
      return { id: config.id, loaded: true, reconfigured: false };
    }

    const lease = await existing.scheduler.acquire('manager', { timeoutMs: 0, signal });
    const change = compareConfigs(existing.config, config);
    return existing.manage(lease, change === 'same' ? 'registering' : 'reconfiguring', async () => {
      if (change !== 'same') {
        await this.#validateReplacement(existing, config, family);
        if (change === 'reload') await existing.unload();
        existing.replaceConfig(config, family, presets);
      }
      await existing.ensureReady();
      return { id: config.id, loaded: true as const, reconfigured: change !== 'same' };
    });
  }

  /** Unloads one model after all earlier work on it; idempotent. */
  async unload(id: string, signal?: AbortSignal): Promise<{ id: string; loaded: false }> {
    const entry = this.get(id);
    await this.#unloadEntry(entry, signal);
    return { id, loaded: false };
  }

  /**
   * Unloads a selection (every registered model when `ids` is undefined). All barriers are
   * published in one synchronous step, so overlapping bulk calls order the same on every model
   * and never wait on each other in a cycle; idle models are granted at once and freed first.
   */
  async bulkUnload(
    ids: readonly string[] | undefined,
    signal?: AbortSignal,
  ): Promise<{ unloaded: string[]; not_found: string[] }> {
    const selection = [...new Set(ids ?? this.#entries.keys())];
    const known = selection.filter((id) => this.#entries.has(id));
    const notFound = selection.filter((id) => !this.#entries.has(id));
    const jobs = known.map((id) => this.#unloadEntry(this.#entries.get(id)!, signal));
    const results = await Promise.allSettled(jobs);
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    const unloaded = this.parallel
      ? known
      : known.filter((_, i) => (results[i] as PromiseFulfilledResult<boolean>).value);
    return { unloaded, not_found: notFound };
  }

  /** Every model's slots and load, in both modes (status() hides the slots in the serial one). */
  *samples(): Generator<ModelSample> {
    for (const entry of this.#entries.values()) {
      const snapshot = entry.scheduler.snapshot();
      yield {
        id: entry.id,
        loaded: entry.loaded,
        slots: entry.config.slots ?? 1,
        activeSlots: snapshot.activeRequests,
        queuedRequests: snapshot.queuedRequests,
        memoryEstimateBytes: entry.footprint ?? null,
        runnerProcessIds: entry.runnerProcessIds(),
      };
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
  ): void {
    const audio = result.audio ?? request.audio;
    this.#metrics?.ran(
      entry.id,
      entry.config.task,
      wallMs / 1000,
      audio ? durationMs(audio) / 1000 : undefined,
    );
    const trace = traceOf(signal);
    if (trace) {
      trace.model = entry.id;
      trace.slot = slot;
      trace.inferenceMs = (trace.inferenceMs ?? 0) + wallMs;
    }
  }

  status(): ModelStatus[] {
    return [...this.#entries.values()].map((entry) => {
      const c = entry.config;
      const snapshot = entry.scheduler.snapshot();
      const slotFields = this.parallel
        ? {
            slots: c.slots ?? 1,
            active_slots: snapshot.activeRequests,
            queued_requests: snapshot.queuedRequests,
            max_parallel_slots: entry.poolSize,
          }
        : {};
      return {
        id: c.id,
        family: c.family,
        task: c.task,
        mode: c.mode,
        ...slotFields,
        loaded: entry.loaded,
        path: c.path,
        state: entry.activity ?? entry.state.kind,
        ...(entry.lastError ? { last_error: entry.lastError } : {}),
        isolation: isolationOf(c, entry.family),
        memory_estimate_mb: entry.footprint === undefined ? null : Math.ceil(entry.footprint / MIB),
        session_options: c.session_options,
      };
    });
  }

  presetsOf(id: string): ReadonlyMap<string, ResolvedPreset> {
    return this.get(id).presets;
  }

  /** True once a shutdown began: readiness probes answer not-ready, new work is refused. */
  get closing(): boolean {
    return this.#closing !== undefined;
  }

  /**
   * The shutdown: takes no new work, sends every queued request and waiting manager away (503),
   * lets the running requests finish for up to `deadlineMs` (0: without limit), then cancels what
   * still runs through its AbortSignal (a thread is terminated, a runner process killed), and
   * unloads every model. A second call joins the first.
   */
  close(deadlineMs = this.config.shutdown_timeout_ms): Promise<void> {
    this.#closing ??= (async () => {
      this.residency.stopIdleTimer();
      const refusal = new VoxdError('E_SHUTTING_DOWN', 'voxd is shutting down; the request was not started');
      for (const entry of this.#entries.values()) entry.scheduler.refuseWaiting(refusal);
      const pending = new Set(this.#entries.keys());
      const unloads = Promise.allSettled(
        [...this.#entries.values()].map((entry) =>
          this.#unloadEntry(entry).finally(() => pending.delete(entry.id)),
        ),
      );
      const timer =
        deadlineMs > 0
          ? this.#clock.after(deadlineMs, () =>
              this.cancelRunning(`it ran past shutdown_timeout_ms=${deadlineMs}`),
            )
          : undefined;
      // A teardown that never ends (an engine's dispose stuck) must not keep the shutdown open
      // either: past the deadline and a grace period, the shutdown ends without it.
      let giveUp: Timer | undefined;
      const abandoned = new Promise<void>((resolve) => {
        if (deadlineMs > 0) giveUp = this.#clock.after(deadlineMs + TEARDOWN_GRACE_MS, resolve);
      });
      try {
        await Promise.race([unloads, abandoned]);
      } finally {
        timer?.cancel();
        giveUp?.cancel();
      }
      if (pending.size > 0)
        this.#log(
          `shutdown: gave up waiting for the teardown of ${[...pending].join(', ')} (${TEARDOWN_GRACE_MS} ms past shutdown_timeout_ms)`,
        );
      this.#shutdown.abort(new VoxdError('E_SHUTTING_DOWN', 'voxd is shutting down'));
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
    this.#cancel.abort(reason);
    for (const run of this.#running) run.abort(reason);
    this.#shutdown.abort(reason);
  }

  async #unloadEntry(entry: ModelEntry, signal?: AbortSignal): Promise<boolean> {
    const lease = await entry.scheduler.acquire('manager', { timeoutMs: 0, signal });
    return entry.manage(lease, 'unloading', () => entry.unload());
  }

  /**
   * A session's engine died: the model is unloaded (after the work still running on its other
   * slots) with the reason shown as `last_error`, and the next request loads it afresh.
   */
  #retireCrashed(entry: ModelEntry, reason: string): void {
    entry.fail(reason);
    this.#log(`model '${entry.id}': ${reason}; unloading it (the next request reloads it)`);
    void this.#unloadEntry(entry).catch((err: unknown) =>
      this.#log(
        `model '${entry.id}': unloading after a crash failed: ${err instanceof Error ? err.message : String(err)}`,
      ),
    );
  }

  #refuseWhenClosing(): void {
    if (this.#closing) throw new VoxdError('E_SHUTTING_DOWN', 'voxd is shutting down and takes no new work');
  }

  #family(config: ModelConfig) {
    const family = this.catalog.get(config.family);
    if (!family) {
      throw invalidRequest(
        `family: "${config.family}" is unknown; known families: ${[...this.catalog.keys()].join(', ')}`,
      );
    }
    return family;
  }

  /**
   * A model entry naming an installed `package` takes its family, task (unless the entry names one)
   * and path from it; a package that is not installed, or of another family, is a 400.
   */
  async #withPackage(config: ModelConfig): Promise<ModelConfig> {
    if (config.package === undefined) return config;
    const root = this.modelsRoot.root;
    const installed = (await this.modelsRoot.installer.list()).find((p) => p.id === config.package);
    if (!installed)
      throw invalidRequest(
        `package: "${config.package}" is not installed in ${root}; install it with \`voxd models pull ${config.package}\` or POST /v1/ui/models/install`,
      );
    if (config.family !== '' && config.family !== installed.family)
      throw invalidRequest(
        `family: "${config.family}" does not match package "${installed.id}", which is a ${installed.family} model`,
      );
    return {
      ...config,
      family: installed.family,
      task: config.task || (installed.task as TaskToken),
      path: installed.path,
    };
  }

  #checkTask(config: ModelConfig): void {
    const family = this.#family(config);
    if (!family.tasks.includes(config.task)) {
      throw invalidRequest(
        `model '${config.id}': family '${family.name}' does not serve task '${config.task}'; it serves ${family.tasks.join(', ')}`,
      );
    }
    const isolations = family.isolations ?? ['session'];
    if (config.isolation && !isolations.includes(config.isolation)) {
      throw invalidRequest(
        `isolation: "${config.isolation}" is not available for model '${config.id}': family '${family.name}' supports ${isolations.map((i) => `"${i}"`).join(', ')} (its engine object cannot serve two slots at once; see docs/engines.md)`,
      );
    }
  }

  /**
   * Rejects a replacement the model can not take, before anything live is touched. A slot count
   * above 1 is checked against the live pool's capacity when the load inputs are unchanged, and
   * otherwise against a private probe load of the new weights (disposed at once; never published).
   */
  async #validateReplacement(entry: ModelEntry, config: ModelConfig, family: EngineFamily): Promise<void> {
    const slots = config.slots ?? 1;
    if (slots === 1) return;
    const state = entry.state;
    let capacity: number;
    if (state.kind === 'ready' && sameLoadInputs(entry.config, config)) {
      capacity = state.pool.weights.capacity;
    } else {
      let probe: LoadedModel;
      try {
        probe = await family.load(loadSpecOf(config, family, this.#entryContext), this.#shutdown.signal);
      } catch (err) {
        throw engineFailure(`capacity probe of model '${config.id}' failed`, err);
      }
      capacity = probe.capacity;
      // try/await: a dispose may throw before it returns a promise (see ModelEntry's teardown).
      try {
        await probe.dispose();
      } catch (err) {
        this.#log(`model '${config.id}': disposing the capacity probe failed: ${String(err)}`);
      }
    }
    if (slots > capacity) {
      throw invalidRequest(
        `model '${config.id}': slots=${slots} exceeds the capacity ${capacity} that family '${family.name}' advertises`,
      );
    }
  }
}

const LOAD_KEYS = [
  'family',
  'path',
  'task',
  'mode',
  'config',
  'weight',
  'model_spec_override',
  'isolation',
] as const;

/** Whether two configs load the same weights and sessions (so a live capacity still applies). */
function sameLoadInputs(a: ModelConfig, b: ModelConfig): boolean {
  return (
    LOAD_KEYS.every((k) => a[k] === b[k]) &&
    sameMap(a.load_options, b.load_options) &&
    sameMap(a.session_options, b.session_options)
  );
}

/** 'reload' when the pool must be rebuilt, 'metadata' when only request-time settings changed. */
function compareConfigs(a: ModelConfig, b: ModelConfig): 'same' | 'metadata' | 'reload' {
  if (!sameLoadInputs(a, b) || (a.slots ?? 1) !== (b.slots ?? 1)) return 'reload';
  return stableJson(a) === stableJson(b) ? 'same' : 'metadata';
}

/** JSON with object keys sorted, so key order in a request body does not count as a change. */
function stableJson(value: unknown): string {
  return JSON.stringify(value, (_, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)))
      : v,
  );
}

function sameMap(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}
