/**
 * One registered model: its configuration, its admission scheduler and its session pool.
 * Every state transition of a model happens in `#transition`, and only a complete pool is ever
 * published: a failed load disposes what it built, in reverse order, and leaves the entry unloaded.
 */
import type { ModelConfig, ModelIsolation } from '../config/types.js';
import { JobError } from '../engines/job-error.js';
import type { AudioFormat, EngineFamily, EngineSession, LoadSpec } from '../engines/types.js';
import { invalidField, invalidRequest, VoxdError } from '../errors.js';
import { type Logger, modelLogger } from '../observability/logger.js';
import type { Changes } from '../util/changes.js';
import type { Clock } from '../util/clock.js';
import { deferred, raceAbort } from '../util/wait.js';
import { loadFootprint } from './memory.js';
import { canTransition, type ModelState, type Pool } from './model-state.js';
import { type Lease, SlotScheduler } from './slot-scheduler.js';
import type { ResolvedPreset } from './voice-presets.js';

export type ManagerActivity = 'registering' | 'reconfiguring' | 'unloading';

export interface EntryContext {
  readonly clock: Clock;
  /** Told of every state, activity and queue change of the model, for callers awaiting a condition. */
  readonly changes?: Changes;
  readonly backend: string;
  readonly device: number;
  readonly threads: number;
  /** The server's max_queued_requests, for models that set none of their own. */
  readonly maxQueuedRequests: number;
  /** Runs `build` under the residency rules (eviction, memory guard, cold-load serialisation). */
  admitLoad(entry: ModelEntry, build: () => Promise<Pool>): Promise<Pool>;
  /** Aborted at shutdown; loads stop waiting on their gates. */
  readonly shutdownSignal: AbortSignal;
  /** The runtime's message log, for a model whose lines have no logger to go to. */
  warn(message: string): void;
  /** The server's log; each entry logs through a child of it that carries the model id. */
  readonly logger?: Logger;
}

export class ModelEntry {
  readonly id: string;
  /** When the id was first registered, in Unix seconds (OpenAI's `created`); a reconfiguration keeps it. */
  readonly created = Math.floor(Date.now() / 1000);
  readonly scheduler: SlotScheduler;
  /** A line on behalf of this model: with the `model` field (its id) when the server has a logger. */
  readonly log: (message: string) => void;
  /** This model's child of the server's logger (modelLogger): its loads and unloads go here. */
  readonly #logger: Logger | undefined;
  #config: ModelConfig;
  #family: EngineFamily;
  #presets: ReadonlyMap<string, ResolvedPreset>;
  #state: ModelState = { kind: 'unloaded' };
  /** What a manager is doing while it holds the exclusive lease, for status. */
  #activity: ManagerActivity | null = null;
  #generation = 0;
  #lastUsedAt: number;
  #lastError: string | undefined;
  /** The memory estimate of the last load, for status (undefined before one, or when unknown). */
  #footprint: number | undefined;
  readonly #ctx: EntryContext;

  constructor(
    config: ModelConfig,
    family: EngineFamily,
    presets: ReadonlyMap<string, ResolvedPreset>,
    ctx: EntryContext,
  ) {
    this.id = config.id;
    this.#config = config;
    this.#family = family;
    this.#presets = presets;
    this.#ctx = ctx;
    const logger = ctx.logger && modelLogger(ctx.logger, config.id);
    this.#logger = logger;
    this.log = logger ? (message) => logger.info(message) : ctx.warn;
    this.#lastUsedAt = ctx.clock.now();
    this.scheduler = new SlotScheduler(config.id, config.slots ?? 1, ctx.clock, ctx.changes);
    this.scheduler.bound.max = config.max_queued_requests ?? ctx.maxQueuedRequests;
  }

  get config(): ModelConfig {
    return this.#config;
  }
  /** Why a fault last took this model down (shown in status until it loads again). */
  get lastError(): string | undefined {
    return this.#lastError;
  }
  /** Records a fault of this model's engine (its runner died); the runtime then unloads it. */
  fail(reason: string): void {
    this.#lastError = reason;
  }
  get family(): EngineFamily {
    return this.#family;
  }
  get presets(): ReadonlyMap<string, ResolvedPreset> {
    return this.#presets;
  }
  get state(): ModelState {
    return this.#state;
  }
  get activity(): string | null {
    return this.#activity;
  }
  get loaded(): boolean {
    return this.#state.kind === 'ready';
  }
  /**
   * The format the published pool takes input audio in; undefined while none is published. A
   * streaming front end converts audio to it as it arrives rather than holding the client's format.
   */
  get audioInput(): AudioFormat | undefined {
    return this.#state.kind === 'ready' ? this.#state.pool.weights.audioInput : undefined;
  }
  /** The runner processes the published pool's sessions run on now (each once; none while unloaded). */
  runnerProcessIds(): number[] {
    if (this.#state.kind !== 'ready') return [];
    const pids = new Set<number>();
    for (const session of this.#state.pool.sessions) {
      const pid = session.processId?.();
      if (pid !== undefined) pids.add(pid);
    }
    return [...pids];
  }

  /** Sessions in the published pool; null while no pool is published. */
  get poolSize(): number | null {
    return this.#state.kind === 'ready' ? this.#state.pool.sessions.length : null;
  }
  get lastUsedAt(): number {
    return this.#lastUsedAt;
  }
  /** Bytes the last load was estimated to take (weights once per copy plus per-runner cost). */
  get footprint(): number | undefined {
    return this.#footprint;
  }

  /** Estimates what loading the current config takes (src/runtime/memory.ts), and keeps it for status. */
  async estimateFootprint(): Promise<number | undefined> {
    this.#footprint = await loadFootprint(this.#family, this.loadSpec(), this.#config.slots ?? 1);
    return this.#footprint;
  }

  /** Stamps activity for LRU eviction and idle retirement. */
  touch(): void {
    this.#lastUsedAt = this.#ctx.clock.now();
  }

  /**
   * Runs `work` as the holder of `lease` (this entry's manager lease), showing `activity` in status,
   * and releases the lease when the work ends, however it ends.
   */
  async manage<T>(lease: Lease, activity: ManagerActivity, work: () => Promise<T>): Promise<T> {
    this.#activity = activity;
    this.scheduler.changes.notify();
    try {
      return await work();
    } finally {
      this.#activity = null;
      lease.release();
    }
  }

  /**
   * Replaces the configuration. Only the manager-lease holder calls this, so no request can see a
   * mix of old and new metadata; a published pool is kept only when the load inputs are unchanged.
   */
  replaceConfig(
    config: ModelConfig,
    family: EngineFamily,
    presets: ReadonlyMap<string, ResolvedPreset>,
  ): void {
    const kind = this.#state.kind;
    if (kind === 'loading' || kind === 'unloading') {
      throw new VoxdError('E_INTERNAL', `cannot reconfigure '${this.id}' while ${kind}`);
    }
    this.#config = config;
    this.#family = family;
    this.#presets = presets;
    this.scheduler.setCapacity(config.slots ?? 1);
    this.scheduler.bound.max = config.max_queued_requests ?? this.#ctx.maxQueuedRequests;
  }

  /**
   * The pool, loading it first if needed. Called by a request that holds a slot: concurrent first
   * requests share one initialisation, and a caller whose signal aborts stops waiting while the
   * load goes on for the others (the pin keeps managers out until it ends).
   */
  async ensureReady(signal?: AbortSignal): Promise<Pool> {
    const state = this.#state;
    if (state.kind === 'ready') return state.pool;
    if (state.kind === 'loading') return raceAbort(state.done, signal);
    if (state.kind === 'unloading') {
      throw new VoxdError('E_INTERNAL', `model '${this.id}' is unloading while a lease is held`);
    }
    const unpin = this.scheduler.pin();
    const done = this.#startLoad();
    done.then(unpin, unpin);
    return raceAbort(done, signal);
  }

  /**
   * Logical unload first (status shows unloaded, capacity null), then the slow teardown: sessions
   * in reverse order, then the weights. Only the manager-lease holder calls this.
   * Returns whether a pool was published.
   */
  async unload(): Promise<boolean> {
    const state = this.#state;
    if (state.kind !== 'ready') return false;
    this.#transition({ kind: 'unloading' });
    try {
      await this.#teardown(state.pool.sessions, state.pool.weights);
    } finally {
      this.#transition({ kind: 'unloaded' });
    }
    this.#logger?.info('model unloaded');
    return true;
  }

  /** Binds a free session of the published pool to a request; the caller must hold a slot. */
  checkout(pool: Pool): { session: EngineSession; slot: number; checkin(): void } {
    const session = pool.free.pop();
    if (!session)
      throw new VoxdError('E_INTERNAL', `model '${this.id}' has no free session for an admitted request`);
    let returned = false;
    return {
      session,
      slot: pool.sessions.indexOf(session),
      checkin: () => {
        if (returned) return;
        returned = true;
        pool.free.push(session);
      },
    };
  }

  loadSpec(): LoadSpec {
    return loadSpecOf(this.#config, this.#family, this.#ctx);
  }

  #startLoad(): Promise<Pool> {
    const published = deferred<Pool>();
    this.#transition({ kind: 'loading', done: published.promise });
    this.#ctx
      .admitLoad(this, async () => {
        const started = performance.now();
        const pool = await this.#build();
        this.#logger?.info(
          {
            slots: pool.sessions.length,
            generation: pool.generation,
            load_ms: Math.round(performance.now() - started),
          },
          'model loaded',
        );
        // Publish while the residency guard is still held, so the next guarded load counts this model.
        this.#transition({ kind: 'ready', pool });
        this.#lastError = undefined;
        this.touch();
        return pool;
      })
      .then(published.resolve, (err: unknown) => {
        this.#transition({ kind: 'unloaded' });
        published.reject(err);
      });
    return published.promise;
  }

  /** Builds weights, primary and clones privately, in order; on any failure unwinds in reverse. */
  async #build(): Promise<Pool> {
    const spec = this.loadSpec();
    await this.estimateFootprint();
    const slots = this.#config.slots ?? 1;
    const signal = this.#ctx.shutdownSignal;
    let weights: Awaited<ReturnType<EngineFamily['load']>>;
    try {
      weights = await this.#family.load(spec, signal);
    } catch (err) {
      throw engineFailure(`failed to load model '${this.id}'`, err);
    }
    const sessions: EngineSession[] = [];
    try {
      if (slots > weights.capacity) {
        throw invalidRequest(
          `model '${this.id}': slots=${slots} exceeds the capacity ${weights.capacity} that family '${this.#family.name}' advertises`,
        );
      }
      for (let index = 0; index < slots; index++) {
        let session: EngineSession | null;
        try {
          session = await weights.createSession({ index, sessionOptions: this.#config.session_options });
        } catch (err) {
          throw engineFailure(`failed to create session ${index} of model '${this.id}'`, err);
        }
        if (!session)
          throw engineFailure(
            `failed to create session ${index} of model '${this.id}'`,
            'the engine returned no session',
          );
        sessions.push(session);
      }
    } catch (err) {
      await this.#teardown(sessions, weights);
      throw err;
    }
    this.#generation += 1;
    return { weights, sessions, free: [...sessions].reverse(), generation: this.#generation };
  }

  async #teardown(sessions: readonly EngineSession[], weights: { dispose(): Promise<void> }): Promise<void> {
    // try/await, not .catch(): a native binding may throw before it returns a promise, and one
    // failing dispose must not keep the others (and the weights) from being released.
    for (const session of [...sessions].reverse()) {
      try {
        await session.dispose();
      } catch (err) {
        this.log(`model '${this.id}': disposing a session failed: ${describe(err)}`);
      }
    }
    try {
      await weights.dispose();
    } catch (err) {
      this.log(`model '${this.id}': disposing weights failed: ${describe(err)}`);
    }
  }

  #transition(next: ModelState): void {
    if (!canTransition(this.#state.kind, next.kind)) {
      throw new VoxdError(
        'E_INTERNAL',
        `model '${this.id}': illegal transition ${this.#state.kind} -> ${next.kind}`,
      );
    }
    this.#state = next;
    this.scheduler.changes.notify();
  }
}

/** What a family needs to load the weights of `config`. */
export function loadSpecOf(
  c: ModelConfig,
  family: EngineFamily,
  ctx: Pick<EntryContext, 'backend' | 'device' | 'threads'>,
): LoadSpec {
  return {
    modelId: c.id,
    path: c.path,
    task: c.task,
    mode: c.mode,
    config: c.config,
    weight: c.weight,
    loadOptions: c.load_options,
    backend: ctx.backend,
    device: ctx.device,
    threads: ctx.threads,
    isolation: isolationOf(c, family),
  };
}

/** How the model's slots share its engine: the config's choice, else the family's default. */
export function isolationOf(c: ModelConfig, family: EngineFamily): ModelIsolation {
  return c.isolation ?? family.isolations?.[0] ?? 'session';
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * The one place an engine's failure meets the error catalogue: typed voxd errors (a capacity
 * refusal, say) pass through; a job the engine refused for the request's sake (JobError
 * `invalid_voice`, `no_audio`) is the client's 400; any other fault is E_ENGINE, keeping its cause.
 */
export function engineFailure(context: string, err: unknown): VoxdError {
  if (err instanceof VoxdError) return err;
  if (err instanceof JobError && err.code !== 'engine_failed')
    return invalidField(err.code === 'invalid_voice' ? 'voice' : 'input', err.message);
  return new VoxdError('E_ENGINE', `${context}: ${describe(err)}`, { cause: err });
}
