/**
 * The lifecycle of one model as a discriminated union, and the only edges it may take.
 * `reconfiguring` is not a state of the pool: it is a manager lease held on an entry (see ModelEntry).
 */
import type { EngineSession, LoadedModel } from '../engines/types.js';

export type ModelState =
  | { readonly kind: 'unloaded' }
  | { readonly kind: 'loading'; readonly done: Promise<Pool> }
  | { readonly kind: 'ready'; readonly pool: Pool }
  | { readonly kind: 'unloading' };

export type ModelStateKind = ModelState['kind'];

/** A complete, published pool: weights plus one session per slot, primary first. */
export interface Pool {
  readonly weights: LoadedModel;
  readonly sessions: readonly EngineSession[];
  /** Sessions not bound to a request right now. */
  readonly free: EngineSession[];
  /** How many times this entry has been loaded, counting this load. */
  readonly generation: number;
}

const EDGES: Record<ModelStateKind, readonly ModelStateKind[]> = {
  unloaded: ['loading'],
  loading: ['ready', 'unloaded'],
  ready: ['unloading'],
  unloading: ['unloaded'],
};

export function canTransition(from: ModelStateKind, to: ModelStateKind): boolean {
  return EDGES[from].includes(to);
}
