/**
 * What every real engine family shares (all but the fixture): it runs on the CPU, a model of it
 * advertises four sessions and takes 16 kHz mono input, and its sessions are numbered per family.
 * A family states only its own part: name, tasks, options, and how a load finds its files and
 * what each session runs.
 */
import type { ModelIsolation, TaskToken } from '../config/types.js';
import { ModelRunners, type SessionRunner } from './engine-worker.js';
import type { JobReply } from './job-error.js';
import type { EngineFamily, EngineSession, LoadedModel, LoadSpec, ParamRow } from './types.js';

/** Sessions per model, the same for every family (docs/engines.md gives each family's cost per slot). */
const CAPACITY = 4;
/** The rate input audio is converted to: what the recognizers, diarizers and silero take (TTS takes none). */
export const INPUT_RATE = 16000;

export abstract class CpuFamily implements EngineFamily {
  abstract readonly name: string;
  abstract readonly tasks: readonly TaskToken[];
  abstract readonly params: readonly ParamRow[];
  readonly backends = ['cpu'] as const;
  readonly maxCapacity = CAPACITY;
  declare readonly isolations?: readonly ModelIsolation[];
  #sessions = 0;

  /** Overrides need not restate the type: theirs is checked against this one. */
  abstract load(spec: LoadSpec, signal: AbortSignal): Promise<LoadedModel>;

  /**
   * A loaded model whose sessions `create` makes. Their ids count on across the family's loads,
   * so a reloaded model's sessions do not reuse ids (a test can tell which session served).
   */
  protected loaded(
    spec: LoadSpec,
    create: (id: string) => Promise<EngineSession>,
    dispose: () => Promise<void> = async () => {},
  ): LoadedModel {
    return {
      capacity: CAPACITY,
      audioInput: { sampleRate: INPUT_RATE, channels: 1 },
      createSession: () => create(`${spec.modelId}#${++this.#sessions}`),
      dispose,
    };
  }

  /**
   * A loaded model whose sessions are `Session`s given `settings`, each on a runner process started
   * with `url` and `data`: its own, or, under isolation "model" in a family that offers it, one
   * that the model shares and ends after its sessions.
   */
  protected loadedOnRunners<J extends object, R extends JobReply, S>(
    spec: LoadSpec,
    url: URL,
    data: unknown,
    Session: new (id: string, runner: SessionRunner<J, R>, settings: S) => EngineSession,
    settings: S,
  ): LoadedModel {
    const runners = new ModelRunners<J, R>(this.isolations ? spec.isolation : 'session', url, data);
    return this.loaded(
      spec,
      async (id) => new Session(id, runners.forSession(), settings),
      () => runners.dispose(),
    );
  }
}
