/**
 * The runtime facade: the registry of model entries, and the parts that work on it wired together
 * (the request path in inference.ts, registration, reconfiguration and unloads in
 * reconfiguration.ts, residency in residency.ts, the shutdown in shutdown.ts). Engine- and
 * transport-agnostic: status is plain snapshot data (model-snapshot.ts) that the HTTP layer
 * turns into JSON.
 *
 * The serial runtime (default) and the parallel runtime (`--parallel-jobs`) share this code: the
 * serial one is the same scheduler with one slot per model, rejects `slots`, hides the slot fields
 * from status and lists only models it actually unloaded in bulk results.
 */

import type { ModelConfig, ServerConfig } from '../config/types.js';
import type { EngineCatalog } from '../engines/catalog.js';
import type { EngineRequest } from '../engines/types.js';
import { unknownModel } from '../errors.js';
import type { Installer } from '../models/installer.js';
import type { ModelsRoot } from '../models/models-root.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { Changes } from '../util/changes.js';
import { type Clock, systemClock } from '../util/clock.js';
import { type Admission, Inference, type InferenceOptions, type InferenceOutcome } from './inference.js';
import { systemFreeMemoryMb } from './memory.js';
import type { ManagerActivity, ModelEntry } from './model-entry.js';
import { type ModelSnapshot, snapshotOf } from './model-snapshot.js';
import { Reconfiguration, unloadEntry } from './reconfiguration.js';
import { Residency } from './residency.js';
import { Shutdown } from './shutdown.js';
import type { ResolvedPreset } from './voice-presets.js';

export type { Admission, InferenceOptions, InferenceOutcome } from './inference.js';

export interface RuntimeDeps {
  catalog: EngineCatalog;
  /** Installed model packages and their installer. */
  modelsRoot: ModelsRoot<Installer>;
  clock?: Clock;
  /** Free memory in MiB; tests replace it to drive the memory guard. */
  freeMemoryMb?: () => Promise<number>;
  /** Lines for a caller without a logger (the one-shot CLI); the runtime logs through `logger` when it has one. */
  log?: (message: string) => void;
  /** Where runs, waits and outcomes are counted. */
  metrics?: Metrics;
  /**
   * The server's log: the runtime's lines are info lines on it, and each model logs through a child
   * of it (its loads and unloads, its faults), with the model id as a field.
   */
  logger?: Logger;
}

export class Runtime {
  readonly config: ServerConfig;
  readonly catalog: EngineCatalog;
  readonly residency: Residency;
  readonly modelsRoot: ModelsRoot<Installer>;
  /**
   * The clock every deadline of this server runs on (the one startVoxd was given), for the HTTP
   * routes' own deadlines and times (the live body's timeouts), so that a test's clock moves them too.
   */
  readonly clock: Clock;
  /** Told of every change of a model's state, activity, queue or slots (see the when*() methods). */
  readonly changes = new Changes();
  readonly #entries = new Map<string, ModelEntry>();
  readonly #inference: Inference;
  readonly #reconfiguration: Reconfiguration;
  readonly #shutdown: Shutdown;

  constructor(config: ServerConfig, deps: RuntimeDeps) {
    this.config = config;
    this.catalog = deps.catalog;
    this.modelsRoot = deps.modelsRoot;
    const clock = deps.clock ?? systemClock;
    this.clock = clock;
    const { logger } = deps;
    const log =
      deps.log ??
      (logger
        ? (message: string) => logger.info(message)
        : (message: string) => process.stderr.write(`[voxd] ${message}\n`));
    const refuseWhenClosing = () => this.#shutdown.refuseWhenClosing();
    this.#inference = new Inference({
      config,
      clock,
      metrics: deps.metrics,
      entry: (id) => this.get(id),
      refuseWhenClosing,
    });
    this.#shutdown = new Shutdown({
      clock,
      log,
      entries: this.#entries,
      stopIdleTimer: () => this.residency.stopIdleTimer(),
      cancelRuns: (reason) => this.#inference.cancelAll(reason),
    });
    this.residency = new Residency({
      maxLoadedModels: config.max_loaded_models,
      minFreeMemoryMb: config.min_free_memory_mb,
      idleUnloadMs: config.idle_unload_ms,
      clock,
      freeMemoryMb: deps.freeMemoryMb ?? systemFreeMemoryMb,
      entries: () => this.#entries.values(),
      log,
      shutdownSignal: this.#shutdown.signal,
    });
    this.#reconfiguration = new Reconfiguration({
      entries: this.#entries,
      entryContext: {
        clock,
        changes: this.changes,
        backend: 'cpu',
        device: config.device,
        threads: config.threads,
        maxQueuedRequests: config.max_queued_requests,
        admitLoad: (entry, build) => this.residency.admitLoad(entry, build),
        shutdownSignal: this.#shutdown.signal,
        warn: log,
        logger: deps.logger,
      },
      catalog: this.catalog,
      modelsRoot: this.modelsRoot,
      maxLoadedModels: config.max_loaded_models,
      parallel: config.parallel_jobs,
      refuseWhenClosing,
      shutdownSignal: this.#shutdown.signal,
      log,
    });
  }

  get parallel(): boolean {
    return this.config.parallel_jobs;
  }

  /** Registers the configured models and loads the eager ones; a failed eager load aborts startup. */
  async start(): Promise<void> {
    await this.#reconfiguration.start(this.config.models);
    this.residency.startIdleTimer();
  }

  get(id: string): ModelEntry {
    const entry = this.#entries.get(id);
    if (!entry) throw unknownModel(id);
    return entry;
  }

  /**
   * Resolves once model `id` queues exactly `requests` requests and `managers` management operations.
   * Like every when*() method: no polling (checked on each change), and `signal` ends the wait.
   */
  whenQueued(id: string, requests: number, managers = 0, signal?: AbortSignal): Promise<void> {
    const { scheduler } = this.get(id);
    return this.changes.when(() => {
      const s = scheduler.snapshot();
      return s.queuedRequests === requests && s.queuedManagers === managers;
    }, signal);
  }

  /** Resolves once model `id` is in `state`, or shows manager `activity` (registering, reconfiguring, unloading). */
  whenState(
    id: string,
    state: ModelEntry['state']['kind'] | ManagerActivity,
    signal?: AbortSignal,
  ): Promise<void> {
    const entry = this.get(id);
    return this.changes.when(() => entry.state.kind === state || entry.activity === state, signal);
  }

  /** Resolves once nothing holds, waits for or initialises any model (one model with `id`). */
  whenIdle(id?: string, signal?: AbortSignal): Promise<void> {
    const entries = id === undefined ? () => [...this.#entries.values()] : () => [this.get(id)];
    return this.changes.when(() => entries().every((e) => e.scheduler.idle), signal);
  }

  has(id: string): boolean {
    return this.#entries.has(id);
  }

  /**
   * The model a request names: a registered one, or else a package installed in the models root
   * under that id, registered on first use. Unknown: 404.
   */
  resolve(id: string): Promise<ModelEntry> {
    return this.#reconfiguration.resolve(id);
  }

  get size(): number {
    return this.#entries.size;
  }

  /** Runs one request on one session of the model, loading it first if needed. */
  infer(id: string, request: EngineRequest, options: InferenceOptions): Promise<InferenceOutcome> {
    return this.#inference.infer(id, request, options);
  }

  /**
   * Takes a request lease on the model (FIFO, with the busy timeout) without running anything yet,
   * so a streaming route can hold its place from before its headers go out until its last byte is
   * written. The caller must release it on every path.
   */
  admit(id: string, options: InferenceOptions): Promise<Admission> {
    return this.#inference.admit(id, options);
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

  /**
   * Registers a new id or reconfigures an existing one (see Reconfiguration.register); a new
   * model is loaded before this resolves.
   */
  register(
    config: ModelConfig,
    signal?: AbortSignal,
  ): Promise<{ id: string; loaded: true; reconfigured: boolean }> {
    return this.#reconfiguration.register(config, signal);
  }

  /** Unloads one model after all earlier work on it; idempotent. */
  async unload(id: string, signal?: AbortSignal): Promise<{ id: string; loaded: false }> {
    const entry = this.get(id);
    await unloadEntry(entry, signal);
    return { id, loaded: false };
  }

  /** Unloads a selection (every registered model when `ids` is undefined). */
  bulkUnload(
    ids: readonly string[] | undefined,
    signal?: AbortSignal,
  ): Promise<{ unloaded: string[]; not_found: string[] }> {
    return this.#reconfiguration.bulkUnload(ids, signal);
  }

  /** What every model is doing now, in both modes (the HTTP layer hides the slots in the serial one). */
  snapshots(): ModelSnapshot[] {
    return [...this.#entries.values()].map(snapshotOf);
  }

  presetsOf(id: string): ReadonlyMap<string, ResolvedPreset> {
    return this.get(id).presets;
  }

  /** True once a shutdown began: readiness probes answer not-ready, new work is refused. */
  get closing(): boolean {
    return this.#shutdown.closing;
  }

  /**
   * The shutdown: takes no new work, sends every queued request and waiting manager away (503),
   * lets the running requests finish for up to `deadlineMs` (0: without limit), then cancels what
   * still runs through its AbortSignal (a thread is terminated, a runner process killed), and
   * unloads every model. A second call joins the first.
   */
  close(deadlineMs = this.config.shutdown_timeout_ms): Promise<void> {
    return this.#shutdown.close(deadlineMs);
  }

  /**
   * Cancels every running request now (a shutdown's deadline, or a second signal), and every load
   * in progress.
   */
  cancelRunning(why: string): void {
    this.#shutdown.cancelRunning(why);
  }
}
