/**
 * Which models may be resident: max_loaded_models (evict least-recently-used idle models before a
 * load), min_free_memory_mb (refuse a load that would leave too little memory) and idle_unload_ms
 * (retire models idle that long). Victims are only ever try-acquired: a busy, queued or
 * initialising model is skipped, never waited for, so residency can not deadlock with requests.
 */
import { VoxdError } from '../errors.js';
import type { Clock, Timer } from '../util/clock.js';
import type { ModelEntry } from './model-entry.js';
import type { Pool } from './model-state.js';
import { SlotScheduler } from './slot-scheduler.js';

export interface ResidencyOptions {
  maxLoadedModels: number;
  minFreeMemoryMb: number;
  idleUnloadMs: number;
  clock: Clock;
  freeMemoryMb(): Promise<number>;
  entries(): Iterable<ModelEntry>;
  log(message: string): void;
  shutdownSignal: AbortSignal;
}

const MB = 1024 * 1024;

export class Residency {
  readonly #options: ResidencyOptions;
  /** Serialises cold loads while a limit is on, so two loads can not both pass the same check. */
  readonly #coldLoadGuard: SlotScheduler;
  #idleTimer: Timer | undefined;
  #sweep: Promise<string[]> | undefined;

  constructor(options: ResidencyOptions) {
    this.#options = options;
    this.#coldLoadGuard = new SlotScheduler('cold-load guard', 1, options.clock);
  }

  get guarded(): boolean {
    return this.#options.maxLoadedModels > 0 || this.#options.minFreeMemoryMb > 0;
  }

  /** Runs a load under the residency rules. */
  async admitLoad(entry: ModelEntry, build: () => Promise<Pool>): Promise<Pool> {
    if (!this.guarded) return build();
    const lease = await this.#coldLoadGuard.acquire('request', {
      timeoutMs: 0,
      signal: this.#options.shutdownSignal,
    });
    try {
      await this.#makeRoom(entry);
      await this.#checkMemory(entry);
      return await build();
    } finally {
      lease.release();
    }
  }

  startIdleTimer(): void {
    const idle = this.#options.idleUnloadMs;
    if (idle <= 0 || this.#idleTimer) return;
    const every = Math.max(25, Math.min(1000, Math.floor(idle / 4)));
    this.#idleTimer = this.#options.clock.every(every, () => void this.sweepIdle());
  }

  stopIdleTimer(): void {
    this.#idleTimer?.cancel();
    this.#idleTimer = undefined;
  }

  /**
   * Retires every loaded, entirely idle model whose last activity is idle_unload_ms old; returns their
   * ids. A call while a sweep runs joins that sweep rather than starting a second one.
   */
  sweepIdle(): Promise<string[]> {
    const idle = this.#options.idleUnloadMs;
    if (idle <= 0) return Promise.resolve([]);
    this.#sweep ??= this.#retireIdle(idle).finally(() => {
      this.#sweep = undefined;
    });
    return this.#sweep;
  }

  /** Resolves once the sweep in progress, if any, has ended (tests move the clock, then wait here). */
  async whenSwept(): Promise<void> {
    await this.#sweep;
  }

  async #retireIdle(idle: number): Promise<string[]> {
    const now = this.#options.clock.now();
    const due = [...this.#options.entries()].filter((e) => e.loaded && now - e.lastUsedAt >= idle);
    const retired: string[] = [];
    for (const entry of due) {
      if (await this.#tryUnload(entry)) retired.push(entry.id);
    }
    if (retired.length > 0)
      this.#options.log(`idle ${idle} ms: unloaded ${retired.length} model(s): ${retired.join(', ')}`);
    return retired;
  }

  async #makeRoom(target: ModelEntry): Promise<void> {
    const max = this.#options.maxLoadedModels;
    if (max <= 0) return;
    // Loads are serialised by the guard, so another model in state `loading` is only waiting for
    // its turn: it holds no memory yet and is neither resident nor a victim.
    const resident = [...this.#options.entries()].filter((e) => e !== target && e.loaded);
    let excess = resident.length - (max - 1);
    const victims = resident.sort((a, b) => a.lastUsedAt - b.lastUsedAt);
    for (const victim of victims) {
      if (excess <= 0) break;
      if (await this.#tryUnload(victim)) {
        excess--;
        this.#options.log(`evicted model '${victim.id}' to load '${target.id}' (max_loaded_models=${max})`);
      }
    }
    if (excess > 0) {
      throw new VoxdError(
        'E_RESIDENCY_FULL',
        `cannot load model '${target.id}': max_loaded_models=${max} and every loaded model is busy; retry later`,
      );
    }
  }

  async #checkMemory(target: ModelEntry): Promise<void> {
    const min = this.#options.minFreeMemoryMb;
    if (min <= 0) return;
    const bytes = await target.estimateFootprint();
    if (bytes === undefined) {
      this.#options.log(`model '${target.id}': footprint unknown, memory guard skipped`);
      return;
    }
    const free = await this.#options.freeMemoryMb();
    const needed = bytes / MB;
    if (free - needed < min) {
      throw new VoxdError(
        'E_INSUFFICIENT_MEMORY',
        `cannot load model '${target.id}': ${Math.round(free)} MB free, the model needs about ${Math.ceil(needed)} MB ` +
          `and min_free_memory_mb=${min} must stay free`,
      );
    }
  }

  async #tryUnload(entry: ModelEntry): Promise<boolean> {
    const lease = entry.scheduler.tryAcquireManager();
    if (!lease) return false;
    return entry.manage(lease, 'unloading', () => entry.unload());
  }
}
