/**
 * Assertions shared by the two-model situation tests (pair-matrix*.test.ts): the GET /v1/models
 * fields of one model, a summary of the fixture's record for one model, event order, and the steps
 * the situations' operations share (a manager operation queued behind older work, the outcome of a
 * reconfiguration). What every contract file shares (track among it) is in assertions.ts.
 */
import assert from 'node:assert/strict';
import type { FixtureEvent } from '../../src/engines/fixture/fixture-record.js';
import { type HttpResult, reportOf, whenRuntime } from '../helpers/voxd.js';
import { readyView, type Tracked, track, unloadedView, type View, view } from './assertions.js';
import type { ContractServer, ToggleGate } from './harness.js';

/** Per-test limit: a deadlock fails the test instead of hanging the file. */
export const LIMIT = { timeout: 10_000 };

export const RECONFIGURED = { id: 'A', loaded: true, reconfigured: true };
export const A_UNLOADED = { id: 'A', loaded: false };
export const BOTH = { unloaded: ['A', 'B'], not_found: [] };

export const readyFields = (slots: number, active = 0, queued = 0): View =>
  readyView(slots, { active_slots: active, queued_requests: queued });

/** No published pool: unloaded, loading, unloading or a manager activity ('reconfiguring'...). */
export const poolless = (state: string, slots: number, active = 0, queued = 0): View =>
  unloadedView(slots, { state, active_slots: active, queued_requests: queued });

/** Asserts every slot/lifecycle field of the model's GET /v1/models entry. */
export async function expectFields(c: ContractServer, id: string, want: View, when = ''): Promise<void> {
  assert.deepEqual(await view(c, id), want, `GET /v1/models entry of ${id}${when ? ` ${when}` : ''}`);
}

export interface RecordSummary {
  /** Generations of successful loads, in order (a capacity probe is a load too). */
  loads: number[];
  sessions: number;
  sessionsDisposed: number;
  /** Generations whose weights were disposed, in order. */
  weightsDisposed: number[];
}

/** The fixture's record for one model, summarised. */
export function summary(c: ContractServer, id: string): RecordSummary {
  return {
    loads: c.events(id, 'load').map((e) => e.generation),
    sessions: c.count(id, 'session-created'),
    sessionsDisposed: c.count(id, 'session-disposed'),
    weightsDisposed: c.events(id, 'weights-disposed').map((e) => e.generation),
  };
}

export function expectRecord(c: ContractServer, id: string, want: RecordSummary, when = ''): void {
  assert.deepEqual(summary(c, id), want, `fixture record of ${id}${when ? ` ${when}` : ''}`);
}

/** The record of a model never loaded. */
export const NEVER_LOADED: RecordSummary = {
  loads: [],
  sessions: 0,
  sessionsDisposed: 0,
  weightsDisposed: [],
};

/** The record of a model loaded once with `sessions` sessions and still loaded. */
export const loadedOnce = (sessions: number): RecordSummary => ({
  loads: [1],
  sessions,
  sessionsDisposed: 0,
  weightsDisposed: [],
});

/** The record of a model loaded once and torn down: every session and the weights disposed. */
export const freedOnce = (sessions: number): RecordSummary => ({
  loads: [1],
  sessions,
  sessionsDisposed: sessions,
  weightsDisposed: [1],
});

/** Asserts the model's GET /v1/models fields, then its fixture record. */
export async function expectModel(
  c: ContractServer,
  id: string,
  fields: View,
  record: RecordSummary,
  when = '',
): Promise<void> {
  await expectFields(c, id, fields, when);
  expectRecord(c, id, record, when);
}

/** The model is ready and idle, loaded once with `slots` sessions and never torn down. */
export const expectIdle = (c: ContractServer, id: string, slots: number, when = ''): Promise<void> =>
  expectModel(c, id, readyFields(slots), loadedOnce(slots), when);

/** The model is unloaded after one load: every session and the weights disposed. */
export const expectFreed = (c: ContractServer, id: string, slots: number, when = ''): Promise<void> =>
  expectModel(c, id, poolless('unloaded', slots), freedOnce(slots), when);

export type Match = Partial<FixtureEvent> & { type: FixtureEvent['type']; model: string };

function matches(e: FixtureEvent, m: Match): boolean {
  return Object.entries(m).every(([k, v]) => (e as unknown as Record<string, unknown>)[k] === v);
}

/** Index of the first (or last) event matching `m` in the whole record; asserts there is one. */
export function eventIndex(c: ContractServer, m: Match, which: 'first' | 'last' = 'first'): number {
  const events = c.s.fixture.record.events;
  const i =
    which === 'first' ? events.findIndex((e) => matches(e, m)) : events.findLastIndex((e) => matches(e, m));
  assert.ok(i >= 0, `the record has a ${JSON.stringify(m)} event`);
  return i;
}

/** Asserts that the last event matching `a` precedes the first event matching `b`. */
export function expectAllBefore(c: ContractServer, a: Match, b: Match): void {
  const last = eventIndex(c, a, 'last');
  const first = eventIndex(c, b, 'first');
  assert.ok(
    last < first,
    `every ${JSON.stringify(a)} (last #${last}) precedes ${JSON.stringify(b)} (#${first})`,
  );
}

/** `n` requests on the model, each held in its run by its own closed gate. */
export async function runEach(
  c: ContractServer,
  id: string,
  n: number,
): Promise<{ gates: ToggleGate[]; requests: Promise<HttpResult>[] }> {
  const before = c.count(id, 'run-start');
  const gates: ToggleGate[] = [];
  const requests: Promise<HttpResult>[] = [];
  for (let i = 0; i < n; i++) {
    const gate = await c.runGate();
    gates.push(gate);
    requests.push(c.infer(id, { run_gate: gate.path }));
    // One at a time, so the i-th request holds the i-th admitted slot.
    await c.waitCount(id, 'run-start', before + i + 1);
  }
  return { gates, requests };
}

/** Waits until the scheduler of `id` satisfies `check` (state it reached, not a sleep). */
export function waitScheduler(
  c: ContractServer,
  id: string,
  what: string,
  check: (s: ReturnType<ContractServer['snapshot']>) => boolean,
): Promise<void> {
  return whenRuntime(c.s.voxd.runtime, `${id}: ${what}`, () => check(c.snapshot(id)));
}

/** Asserts that every response is a 200 fixture report of the given generation. */
export async function expectReports(
  requests: Promise<HttpResult>[],
  generation: number,
  // biome-ignore lint/suspicious/noExplicitAny: the fixture report is arbitrary JSON
): Promise<any[]> {
  const reports = (await Promise.all(requests)).map((r) => reportOf(r));
  for (const r of reports) assert.equal(r.generation, generation, 'served by the expected load');
  return reports;
}

/** Asserts a 200 with exactly this JSON body. */
export async function expectJson(request: Promise<HttpResult>, body: unknown): Promise<void> {
  const res = await request;
  assert.equal(res.status, 200, `status 200, got ${res.status} ${res.body.toString('utf8')}`);
  assert.deepEqual(res.json, body);
}

/**
 * The load generations a reconfiguration to a changed load_options adds after `prior` earlier
 * loads: with slots > 1 the changed inputs are validated by a private capacity probe (a load
 * disposed at once, no sessions) before the replacement itself loads.
 */
export function reconfigLoads(prior: number, slots: number): { probe: number | null; replacement: number } {
  return slots > 1 ? { probe: prior + 1, replacement: prior + 2 } : { probe: null, replacement: prior + 1 };
}

export const NEXT = { load_options: { variant: 'next' } };

/** The models of most situations: A with n slots, B with one. */
export const aAndB = (n: number) => [
  { id: 'A', slots: n },
  { id: 'B', slots: 1 },
];

/** Every run on A's first load ended before that load's weights were disposed. */
export const OLD_RUNS_FIRST: [Match, Match] = [
  { type: 'run-end', model: 'A', generation: 1 },
  { type: 'weights-disposed', model: 'A', generation: 1 },
];

/**
 * A's record after one load and a reconfiguration to a changed load_options (see reconfigLoads).
 * With a capacity probe, `disposal` says which weights went first: 'probe-first' when the old pool
 * still served while the probe ran, 'old-first' when the old weights were already going.
 */
export function reconfiguredRecord(slots: number, disposal: 'probe-first' | 'old-first'): RecordSummary {
  const { probe, replacement } = reconfigLoads(1, slots);
  if (!probe)
    return { loads: [1, replacement], sessions: 2 * slots, sessionsDisposed: slots, weightsDisposed: [1] };
  return {
    loads: [1, probe, replacement],
    sessions: 2 * slots,
    sessionsDisposed: slots,
    weightsDisposed: disposal === 'probe-first' ? [probe, 1] : [1, probe],
  };
}

/**
 * Asserts the reconfiguration's 200, then A ready with `reconfiguredRecord`; returns the
 * generation of the replacement pool.
 */
export async function expectReconfigured(
  c: ContractServer,
  response: Promise<HttpResult>,
  slots: number,
  disposal: 'probe-first' | 'old-first',
): Promise<number> {
  await expectJson(response, RECONFIGURED);
  await expectModel(c, 'A', readyFields(slots), reconfiguredRecord(slots, disposal));
  return reconfigLoads(1, slots).replacement;
}

/** After a reconfiguration to NEXT: a request runs on the replacement pool with the new options. */
export async function expectReplacement(c: ContractServer, generation: number): Promise<void> {
  const report = reportOf(await c.infer('A'));
  assert.equal(report.generation, generation, 'served by the replacement pool');
  assert.equal(report.load_options.variant, 'next', 'bound to the new configuration');
}

/**
 * Sends a manager operation on `id` (a reconfiguration, an unload) and waits until the model has
 * `managers` manager leases queued; then asserts the model's fields (when given) and that the
 * operation has not been answered.
 */
export async function queueManager(
  c: ContractServer,
  id: string,
  send: Promise<HttpResult>,
  what: string,
  fields?: View,
  managers = 1,
): Promise<Tracked> {
  const operation = track(send);
  await waitScheduler(c, id, `${what} queued`, (s) => s.queuedManagers === managers);
  if (fields) await expectFields(c, id, fields, `with the ${what} queued`);
  assert.equal(operation.settled, false, `the ${what} waits`);
  return operation;
}

/**
 * An unload of A (`slots` slots) queued behind A's older work: asserts that it waits (with A's
 * `fields` meanwhile, when given) until `release` lets that work finish, then its 200, A freed,
 * and that every run of A ended before A's first `disposal` event.
 */
export async function expectUnloadAfterOlderWork(
  c: ContractServer,
  slots: number,
  release: () => Promise<unknown>,
  disposal: 'session-disposed' | 'weights-disposed',
  fields?: View,
): Promise<void> {
  const unload = await queueManager(c, 'A', c.unload('A'), 'unload', fields);
  await release();
  await expectJson(unload.promise, A_UNLOADED);
  await expectFreed(c, 'A', slots);
  expectAllBefore(c, { type: 'run-end', model: 'A' }, { type: disposal, model: 'A' });
}

/** Sends a bulk unload of A and B and waits until idle B (one slot) is freed; returns the bulk. */
export async function bulkFreeingB(c: ContractServer): Promise<Tracked> {
  const bulk = track(c.bulkUnload(['A', 'B']));
  await c.waitCount('B', 'weights-disposed', 1);
  await expectFreed(c, 'B', 1);
  return bulk;
}
