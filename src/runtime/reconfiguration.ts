/**
 * Changes to what the runtime holds: registering models (configured ones at startup, installed
 * packages on first use, new ones over the API) and loading them, reconfiguring a registered one,
 * unloading one, a selection, or one whose engine crashed. Each change runs under the model's
 * manager lease, after all earlier work on it.
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { packageModelConfig } from '../config/model-config.js';
import type { ModelConfig, TaskToken } from '../config/types.js';
import type { EngineCatalog } from '../engines/catalog.js';
import type { EngineFamily, LoadedModel } from '../engines/types.js';
import { invalidRequest, notInstalled, unknownModel, type VoxdError } from '../errors.js';
import { PACKAGE_ID } from '../models/catalog.js';
import type { Installer } from '../models/installer.js';
import type { ModelsRoot } from '../models/models-root.js';
import { compareConfigs, sameLoadInputs } from './config-change.js';
import { defineModel } from './model-definition.js';
import { type EntryContext, engineFailure, loadSpecOf, ModelEntry } from './model-entry.js';

/** The 404 of an id that is no model here: a catalogue package's says how to install it. */
export function missingModel(id: string, installer: Pick<Installer, 'catalogued'>): VoxdError {
  return installer.catalogued(id) ? notInstalled(id) : unknownModel(id);
}

export interface ReconfigurationDeps {
  /** The runtime's registry, where a registration publishes its new entry. */
  entries: Map<string, ModelEntry>;
  entryContext: EntryContext;
  catalog: EngineCatalog;
  modelsRoot: ModelsRoot<Installer>;
  /** max_loaded_models: how many eager models load at startup (0: all). */
  maxLoadedModels: number;
  /** Whether the parallel runtime runs: a serial bulk unload lists only the models it unloaded. */
  parallel: boolean;
  /** Throws E_SHUTTING_DOWN once a shutdown began. */
  refuseWhenClosing(): void;
  /** Aborted at shutdown; a capacity probe's load stops. */
  shutdownSignal: AbortSignal;
  log(message: string): void;
}

export class Reconfiguration {
  readonly #deps: ReconfigurationDeps;

  constructor(deps: ReconfigurationDeps) {
    this.#deps = deps;
  }

  /** Registers the configured models and loads the eager ones; a failed eager load aborts startup. */
  async start(models: readonly ModelConfig[]): Promise<void> {
    const { entries, entryContext, maxLoadedModels: limit } = this.#deps;
    for (const entryConfig of models) {
      const { config, family, presets } = await defineModel(entryConfig, this.#deps);
      entries.set(config.id, new ModelEntry(config, family, presets, entryContext));
    }
    const eager = models.filter((m) => !m.lazy);
    const now = limit > 0 ? eager.slice(0, limit) : eager;
    for (const deferred of eager.slice(now.length)) {
      this.#deps.log(
        `model '${deferred.id}' not loaded at startup: max_loaded_models=${limit}; it loads on first use`,
      );
    }
    for (const model of now) {
      const entry = entries.get(model.id)!;
      const lease = await entry.scheduler.acquire('manager', { timeoutMs: 0 });
      await entry.manage(lease, 'registering', () => entry.ensureReady());
    }
  }

  /**
   * The model a request names: a registered one, or else a package installed in the models root
   * under that id, which is registered (lazily, its family and task from the package) and loaded
   * on first use, as `ollama run` uses a pulled model by name. Unknown: 404.
   */
  async resolve(id: string): Promise<ModelEntry> {
    const { entries, modelsRoot } = this.#deps;
    const known = entries.get(id);
    if (known) return known;
    // Only an id that can be a package, with a folder of that name, is looked up: a request naming
    // an unknown model must not make the server scan the models root.
    if (!PACKAGE_ID.test(id)) throw unknownModel(id);
    const folder = await stat(join(modelsRoot.root, id)).catch(() => undefined);
    if (!folder?.isDirectory()) throw this.#missing(id);
    const installed = (await modelsRoot.installer.list()).find((p) => p.id === id);
    // Registered meanwhile (by a concurrent request for the same package, say).
    const raced = entries.get(id);
    if (raced) return raced;
    if (!installed) throw this.#missing(id);
    await this.register(
      packageModelConfig(id, {
        family: installed.family,
        path: installed.path,
        task: installed.task as TaskToken,
      }),
    );
    const entry = entries.get(id);
    if (!entry) throw unknownModel(id);
    return entry;
  }

  #missing(id: string) {
    return missingModel(id, this.#deps.modelsRoot.installer);
  }

  /**
   * Registers a new id or reconfigures an existing one. The replacement is validated privately
   * before any lease is taken; a new entry is published once, under its own manager lease, before
   * its first load, so concurrent registrations of the same id queue on it.
   */
  async register(
    requested: ModelConfig,
    signal?: AbortSignal,
  ): Promise<{ id: string; loaded: true; reconfigured: boolean }> {
    const { entries, entryContext, refuseWhenClosing } = this.#deps;
    refuseWhenClosing();
    const { config, family, presets } = await defineModel(requested, this.#deps);
    // A shutdown may have begun while the presets were read: it would not see this registration.
    refuseWhenClosing();
    const existing = entries.get(config.id);
    if (!existing) {
      const entry = new ModelEntry(config, family, presets, entryContext);
      const lease = entry.scheduler.tryAcquireManager()!;
      entries.set(config.id, entry);
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

  /**
   * Unloads a selection (every registered model when `ids` is undefined). All barriers are
   * published in one synchronous step, so overlapping bulk calls order the same on every model
   * and never wait on each other in a cycle; idle models are granted at once and freed first.
   */
  async bulkUnload(
    ids: readonly string[] | undefined,
    signal?: AbortSignal,
  ): Promise<{ unloaded: string[]; not_found: string[] }> {
    const { entries } = this.#deps;
    const selection = [...new Set(ids ?? entries.keys())];
    const known = selection.filter((id) => entries.has(id));
    const notFound = selection.filter((id) => !entries.has(id));
    const jobs = known.map((id) => unloadEntry(entries.get(id)!, signal));
    const results = await Promise.allSettled(jobs);
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    const unloaded = this.#deps.parallel
      ? known
      : known.filter((_, i) => (results[i] as PromiseFulfilledResult<boolean>).value);
    return { unloaded, not_found: notFound };
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
        probe = await family.load(
          loadSpecOf(config, family, this.#deps.entryContext),
          this.#deps.shutdownSignal,
        );
      } catch (err) {
        throw engineFailure(`capacity probe of model '${config.id}' failed`, err);
      }
      capacity = probe.capacity;
      // try/await: a dispose may throw before it returns a promise (see ModelEntry's teardown).
      try {
        await probe.dispose();
      } catch (err) {
        this.#deps.log(`model '${config.id}': disposing the capacity probe failed: ${String(err)}`);
      }
    }
    if (slots > capacity) {
      throw invalidRequest(
        `model '${config.id}': slots=${slots} exceeds the capacity ${capacity} that family '${family.name}' advertises`,
      );
    }
  }
}

/** Unloads one model after all earlier work on it; false when it was not loaded. */
export async function unloadEntry(entry: ModelEntry, signal?: AbortSignal): Promise<boolean> {
  const lease = await entry.scheduler.acquire('manager', { timeoutMs: 0, signal });
  return entry.manage(lease, 'unloading', () => entry.unload());
}

/**
 * A session's engine died: the model is unloaded (after the work still running on its other
 * slots) with the reason shown as `last_error`, and the next request loads it afresh.
 */
export function retireCrashed(entry: ModelEntry, reason: string): void {
  entry.fail(reason);
  entry.log(`model '${entry.id}': ${reason}; unloading it (the next request reloads it)`);
  void unloadEntry(entry).catch((err: unknown) =>
    entry.log(
      `model '${entry.id}': unloading after a crash failed: ${err instanceof Error ? err.message : String(err)}`,
    ),
  );
}
