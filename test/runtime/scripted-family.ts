/**
 * An engine family scripted by a unit test, for ModelEntry and Residency: every load, session
 * creation and disposal is recorded in order, and any of them can be made to fail or to wait on a
 * gate the test opens. It runs nothing; the HTTP and contract tests use the real fixture engine.
 */
import { packageModelConfig } from '../../src/config/model-config.js';
import type { ModelConfig } from '../../src/config/types.js';
import type { EngineFamily, EngineSession, LoadedModel } from '../../src/engines/types.js';
import { type EntryContext, ModelEntry } from '../../src/runtime/model-entry.js';
import type { Pool } from '../../src/runtime/model-state.js';
import { deferred } from '../../src/util/wait.js';
import { ManualClock } from '../helpers/voxd.js';

export interface Script {
  /** The weights' capacity (default 4). */
  capacity?: number;
  /** Throw from load, or from creating session `failSession` (null: return no session). */
  failLoad?: boolean;
  failSession?: { index: number; as: 'throw' | 'null' };
  /** Hold load, or the first session's dispose, until the test resolves the gate. */
  loadGate?: Promise<void>;
  disposeGate?: Promise<void>;
  /** Bytes a load takes (estimateFootprint); undefined: unknown. */
  footprint?: number;
}

export class ScriptedFamily implements EngineFamily {
  readonly name = 'scripted';
  readonly tasks = ['asr'] as const;
  readonly backends = ['cpu'];
  readonly maxCapacity = 16;
  readonly params = [];
  /** What happened, in order: `load`, `create 0`, `dispose session 1`, `dispose weights`. */
  readonly events: string[] = [];
  loads = 0;
  readonly #waiting = new Map<string, () => void>();

  constructor(public script: Script = {}) {}

  /** Resolves once `event` has been recorded (at once if it already was). */
  reached(event: string): Promise<void> {
    if (this.events.includes(event)) return Promise.resolve();
    return new Promise((resolve) => this.#waiting.set(event, resolve));
  }

  #record(event: string): void {
    this.events.push(event);
    this.#waiting.get(event)?.();
    this.#waiting.delete(event);
  }

  async estimateFootprint(): Promise<number | undefined> {
    return this.script.footprint;
  }

  async load(): Promise<LoadedModel> {
    this.loads++;
    this.#record('load');
    await this.script.loadGate;
    if (this.script.failLoad) throw new Error('scripted: load failed');
    const record = (event: string) => this.#record(event);
    const script = this.script;
    return {
      capacity: script.capacity ?? 4,
      audioInput: { sampleRate: 16000, channels: 1 },
      async createSession({ index }): Promise<EngineSession | null> {
        record(`create ${index}`);
        if (script.failSession?.index === index) {
          if (script.failSession.as === 'null') return null;
          throw new Error(`scripted: session ${index} failed`);
        }
        return {
          id: `session-${index}`,
          run: async () => ({ text: `from ${index}` }),
          dispose: async () => {
            record(`dispose session ${index}`);
            if (index === 0) await script.disposeGate;
          },
        };
      },
      async dispose() {
        record('dispose weights');
      },
    };
  }
}

export function modelConfig(id: string, extra: Partial<ModelConfig> = {}): ModelConfig {
  return { ...packageModelConfig(id, { family: 'scripted', path: '', task: 'asr' }), ...extra };
}

export interface EntryFixture {
  entry: ModelEntry;
  family: ScriptedFamily;
  clock: ManualClock;
  warnings: string[];
}

/** A ModelEntry on a scripted family; loads go straight to `build` unless `admitLoad` is given. */
export function scriptedEntry(
  id: string,
  options: {
    script?: Script;
    config?: Partial<ModelConfig>;
    clock?: ManualClock;
    admitLoad?: (entry: ModelEntry, build: () => Promise<Pool>) => Promise<Pool>;
  } = {},
): EntryFixture {
  const family = new ScriptedFamily(options.script);
  const clock = options.clock ?? new ManualClock();
  const warnings: string[] = [];
  const ctx: EntryContext = {
    clock,
    backend: 'cpu',
    device: 0,
    threads: 1,
    maxQueuedRequests: 0,
    admitLoad: options.admitLoad ?? ((_entry, build) => build()),
    shutdownSignal: new AbortController().signal,
    warn: (message) => warnings.push(message),
  };
  return {
    entry: new ModelEntry(modelConfig(id, options.config), family, new Map(), ctx),
    family,
    clock,
    warnings,
  };
}

export { deferred };
