/**
 * Helpers shared by every contract test file: the slot counts each cell runs at, deadlines, the
 * GET /v1/models slot and lifecycle fields of a model, the fixture record of a model as lifecycle
 * strings, waits on the scheduler queues, and promises whose settlement a test can check without
 * waiting on them. The pair and state-matrix files add their own helpers in pair-helpers.ts and
 * state-matrix-helpers.ts.
 */
import assert from 'node:assert/strict';
import type { FixtureEvent } from '../../src/engines/fixture/fixture-record.js';
import { get, type HttpResult, whenRuntime, withDeadline } from '../helpers/voxd.js';
import type { ContractServer } from './harness.js';

/** The slot counts every lifecycle cell runs at. */
export const COUNTS = [1, 2, 4];

export const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

/** Fails when `promise` has not settled within `ms` (a deadline, never a sleep). */
export function within<T>(promise: Promise<T>, what: string, ms = 3000): Promise<T> {
  return withDeadline(promise, what, ms);
}

// ---- GET /v1/models ----

/** The GET /v1/models slot and lifecycle fields of one model. */
export interface View {
  loaded: boolean;
  state: string;
  slots: number;
  active_slots: number;
  queued_requests: number;
  max_parallel_slots: number | null;
}

// biome-ignore lint/suspicious/noExplicitAny: a GET /v1/models entry
export function pick(st: any): View {
  return {
    loaded: st.loaded,
    state: st.state,
    slots: st.slots,
    active_slots: st.active_slots,
    queued_requests: st.queued_requests,
    max_parallel_slots: st.max_parallel_slots,
  };
}

/** The fields of the model's GET /v1/models entry; asserts that the model is listed. */
export async function view(c: ContractServer, id: string): Promise<View> {
  const st = await c.status(id);
  assert.ok(st, `${id} is listed in GET /v1/models`);
  return pick(st);
}

/** The fields of an idle model: no slot in use, nothing queued. */
function idleView(slots: number, loaded: boolean, state: string, max_parallel_slots: number | null): View {
  return { loaded, state, slots, active_slots: 0, queued_requests: 0, max_parallel_slots };
}

/** A model without a published pool: idle and unloaded unless `extra` says otherwise. */
export function unloadedView(slots: number, extra: Partial<View> = {}): View {
  return { ...idleView(slots, false, 'unloaded', null), ...extra };
}

/** A model with a published pool: idle and ready unless `extra` says otherwise. */
export function readyView(slots: number, extra: Partial<View> = {}): View {
  return { ...idleView(slots, true, 'ready', slots), ...extra };
}

/** The ids GET /v1/models lists, in order. */
export async function listed(url: string): Promise<string[]> {
  return (await get(url, '/v1/models')).json.data.map((m: { id: string }) => m.id);
}

// ---- the fixture record as lifecycle strings ----

/** `type:generation` or `type:generation:slot`. */
export function fmt(e: FixtureEvent): string {
  return 'slot' in e ? `${e.type}:${e.generation}:${e.slot}` : `${e.type}:${e.generation}`;
}

/** Loads, session creations/failures and disposals of a model, in order (runs left out). */
export function lifecycle(c: ContractServer, id: string): string[] {
  return c
    .events(id)
    .filter((e) => e.type !== 'run-start' && e.type !== 'run-end')
    .map(fmt);
}

/** A load of generation g and its n sessions. */
export const loadOf = (g: number, n: number): string[] => [
  `load:${g}`,
  ...range(n).map((i) => `session-created:${g}:${i}`),
];

/** The n sessions of generation g disposed, clones before the primary. */
export const disposeSessions = (g: number, n: number): string[] =>
  range(n)
    .reverse()
    .map((i) => `session-disposed:${g}:${i}`);

/** The teardown of a pool: its sessions in reverse, then its weights. */
export const teardownOf = (g: number, n: number): string[] => [
  ...disposeSessions(g, n),
  `weights-disposed:${g}`,
];

/**
 * The teardown of a pool of n sessions built with `fail_session_dispose_at: '0'` and `fail_dispose`:
 * every session is still disposed in reverse, past the primary whose dispose throws, and the
 * weights' dispose is still attempted (and fails).
 */
export const faultyTeardownOf = (g: number, n: number): string[] => [
  ...range(n)
    .reverse()
    .map((i) => (i === 0 ? `session-dispose-failed:${g}:0` : `session-disposed:${g}:${i}`)),
  `weights-dispose-failed:${g}`,
];

/** Load options that make every dispose of a pool fail: the primary's throws, the weights' rejects. */
export const FAULTY_TEARDOWN = { fail_session_dispose_at: '0', fail_dispose: 'true' };

/** A private capacity probe: a load disposed at once, no sessions. */
export const probeOf = (g: number): string[] => [`load:${g}`, `weights-disposed:${g}`];

// ---- scheduler queues and settlement ----

/** Waits until the model's scheduler queues exactly `requests` requests and `managers` managers. */
export const queued = (c: ContractServer, id: string, requests: number, managers = 0): Promise<void> =>
  whenRuntime(
    c.s.voxd.runtime,
    `${id} has ${requests} queued request(s) and ${managers} queued manager(s)`,
    () => c.snapshot(id).queuedRequests === requests && c.snapshot(id).queuedManagers === managers,
  );

export interface Tracked {
  readonly promise: Promise<HttpResult>;
  readonly settled: boolean;
  /** Position in the order the tracked responses settled, -1 while pending. */
  readonly order: number;
}

let settleCounter = 0;

/** Wraps a response promise so a test can see whether, and in which order, it came back. */
export function track(promise: Promise<HttpResult>): Tracked {
  const t = { promise, settled: false, order: -1 };
  promise.then(
    () => {
      t.settled = true;
      t.order = ++settleCounter;
    },
    () => {
      t.settled = true;
      t.order = ++settleCounter;
    },
  );
  return t;
}
