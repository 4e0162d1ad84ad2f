/**
 * Helpers of the "operations crossed with model states" tests (state-matrix-1/2.test.ts): the
 * fixture record as generation lists, event order, a status poller, and the gate choreography that
 * holds a reconfiguration in one of its phases. What every contract file shares is in assertions.ts.
 */
import assert from 'node:assert/strict';
import type { FixtureEvent } from '../../src/engines/fixture/fixture-record.js';
import { get, type HttpResult, post, reportOf, waitUntil, whenRuntime } from '../helpers/voxd.js';
import { type Tracked, track, unloadedView, view } from './assertions.js';
import type { ContractServer, ToggleGate } from './harness.js';

/** The slot count a reconfiguration changes to (always above 1, so a capacity probe runs). */
export const nextSlots = (slots: number): number => (slots === 4 ? 2 : slots * 2);

export const rep = <T>(value: T, n: number): T[] => Array.from({ length: n }, () => value);

/** A `tally` with nothing recorded. */
export const NONE = { load: [], loadFailed: [], created: [], disposed: [], weights: [], runs: [] };

/** The tally of one pool (generation 1, `slots` sessions) loaded and still published, with `runs`. */
export const loadedTally = (slots: number, runs: number[]) => ({
  ...NONE,
  load: [1],
  created: rep(1, slots),
  runs,
});

/** The tally of one pool (generation 1, `slots` sessions) loaded and torn down whole, with `runs`. */
export const freedTally = (slots: number, runs: number[] = []) => ({
  ...loadedTally(slots, runs),
  disposed: rep(1, slots),
  weights: [1],
});

/**
 * The tally after a pool of `slots` (generation 1) ran a request and was replaced by generation
 * `g` with the same slots, which ran one: with more than one slot a capacity probe (2) came first.
 */
export const replacedTally = (slots: number, g: number) => ({
  ...NONE,
  load: slots > 1 ? [1, 2, 3] : [1, 2],
  created: [...rep(1, slots), ...rep(g, slots)],
  disposed: rep(1, slots),
  weights: slots > 1 ? [2, 1] : [1],
  runs: [1, g],
});

/** The models of the two-model rows: M and B with the same slots. */
export const mAndB = (slots: number) => [
  { id: 'M', slots },
  { id: 'B', slots },
];

/** Scheduler fields that a status read must leave as they were. */
export const leases = (s: {
  activeRequests: number;
  queuedRequests: number;
  queuedManagers: number;
  managerActive: boolean;
}) => ({
  activeRequests: s.activeRequests,
  queuedRequests: s.queuedRequests,
  queuedManagers: s.queuedManagers,
  managerActive: s.managerActive,
});

/** The GET /v1/models entry of one model, session options included. */
// biome-ignore lint/suspicious/noExplicitAny: a GET /v1/models entry
export async function statusOf(c: ContractServer, id: string): Promise<any> {
  const { status, json } = await get(c.url, '/v1/models?include_session_options=true');
  assert.equal(status, 200);
  return json.data.find((m: { id: string }) => m.id === id);
}

/**
 * A request whose client disconnects on `abort()`; its promise never rejects (the abort is the
 * expected end), so a test can leave it pending.
 */
export function abortable(c: ContractServer, id: string) {
  const controller = new AbortController();
  const promise = c.infer(id, {}, {}, controller.signal).then(
    (res) => ({ aborted: false, res }),
    () => ({ aborted: true, res: undefined }),
  );
  return { abort: () => controller.abort(), promise };
}

/** The fixture record of one model as generation lists, one list per event type. */
export function tally(c: ContractServer, id: string) {
  const gens = (type: FixtureEvent['type']) => c.events(id, type).map((e) => e.generation);
  return {
    load: gens('load'),
    loadFailed: gens('load-failed'),
    created: gens('session-created'),
    disposed: gens('session-disposed'),
    weights: gens('weights-disposed'),
    runs: gens('run-start'),
  };
}

/** Index in the whole fixture record of the first event matching, -1 if none. */
export function at(
  c: ContractServer,
  id: string,
  type: FixtureEvent['type'],
  generation?: number,
  which: 'first' | 'last' = 'first',
): number {
  const events = c.s.fixture.record.events;
  const match = (e: FixtureEvent) =>
    e.model === id && e.type === type && (generation === undefined || e.generation === generation);
  return which === 'first' ? events.findIndex(match) : events.findLastIndex(match);
}

/** Asserts that event `a` is recorded and comes before event `b`. */
export function assertBefore(
  c: ContractServer,
  a: [string, FixtureEvent['type'], number?],
  b: [string, FixtureEvent['type'], number?],
  message: string,
): void {
  const ia = at(c, a[0], a[1], a[2], 'last');
  const ib = at(c, b[0], b[1], b[2], 'first');
  assert.ok(ia >= 0, `${message}: ${a.join(' ')} is recorded`);
  assert.ok(ib >= 0, `${message}: ${b.join(' ')} is recorded`);
  assert.ok(ia < ib, `${message}: every ${a.join(' ')} precedes ${b.join(' ')}`);
}

/** Slots of the disposed sessions of one generation, in disposal order. */
export function disposedSlots(c: ContractServer, id: string, generation: number): number[] {
  return c
    .events(id, 'session-disposed')
    .filter((e) => e.generation === generation)
    .map((e) => (e as { slot: number }).slot);
}

/** Clones before the primary: slots n-1 .. 0. */
export const reverseSlots = (n: number): number[] => Array.from({ length: n }, (_, i) => n - 1 - i);

/** The fixture report of a successful request: generation, slot, load and session options. */
export const report = reportOf;

/** Polls GET /v1/models for one model until stopped; every observation is kept. */
export function pollStatus(c: ContractServer, id: string) {
  // biome-ignore lint/suspicious/noExplicitAny: GET /v1/models entries
  const samples: any[] = [];
  let stop = false;
  const loop = (async () => {
    while (!stop) samples.push(await statusOf(c, id));
  })();
  return {
    samples,
    async stop() {
      stop = true;
      await loop;
      return samples;
    },
  };
}

export const waitFor = waitUntil;

/** Waits until the scheduler of a model shows the given counts. */
export async function waitSnapshot(
  c: ContractServer,
  id: string,
  want: Partial<ReturnType<ContractServer['snapshot']>>,
): Promise<void> {
  await whenRuntime(c.s.voxd.runtime, `${id} scheduler shows ${JSON.stringify(want)}`, () => {
    const snap = c.snapshot(id) as unknown as Record<string, unknown>;
    return Object.entries(want).every(([k, v]) => snap[k] === v);
  });
}

export interface HeldReconfiguration {
  /** The POST /v1/models/load of the replacement. */
  request: Tracked;
  /** The replacement's own load gate (closed while held); opening it lets the reconfiguration finish. */
  gate: ToggleGate;
  /** The replacement's slot count. */
  slots: number;
  body: Record<string, unknown>;
}

/**
 * Reconfigures a ready model to `slots` (above 1) with changed load and session options, and holds
 * it in one phase of its manager lease:
 *  - 'validating': the private capacity probe of the replacement waits on the replacement's load
 *    gate; the old pool and metadata are still published.
 *  - 'loading': the old pool is retired and the complete new metadata committed; the replacement
 *    pool waits on its load gate.
 * The replacement gets its own load and teardown gates (run gates of the harness, so close()
 * opens them). Generations: the old pool is g, the probe g+1, the replacement pool g+2.
 */
export async function holdReconfiguring(
  c: ContractServer,
  id: string,
  slots: number,
  phase: 'validating' | 'loading',
): Promise<HeldReconfiguration> {
  assert.ok(slots > 1, 'a replacement above one slot is probed');
  const gate = await c.runGate();
  const teardown = await c.runGate();
  await teardown.open();
  const body = {
    ...c.body(id, {
      slots,
      load_options: { variant: 'next', load_gate: gate.path, teardown_gate: teardown.path },
    }),
    session_options: { tag: 'new' },
  };
  const entry = c.entry(id);
  assert.equal(entry.state.kind, 'ready', `${id} is ready before the reconfiguration`);
  if (phase === 'validating') {
    const request = track(post(c.url, '/v1/models/load', body));
    await whenRuntime(
      c.s.voxd.runtime,
      `${id} validates its replacement`,
      () => entry.activity === 'reconfiguring',
    );
    assert.equal(entry.state.kind, 'ready');
    return { request, gate, slots, body };
  }
  // Let the probe through, hold the old teardown, close the replacement's gate, then let the old
  // teardown finish: the replacement load is then the one waiting.
  await gate.open();
  await c.teardown(id).close();
  const request = track(post(c.url, '/v1/models/load', body));
  await whenRuntime(
    c.s.voxd.runtime,
    `${id} retires its old pool`,
    () => entry.activity === 'reconfiguring' && entry.state.kind === 'unloading',
  );
  await gate.close();
  await c.teardown(id).open();
  await whenRuntime(
    c.s.voxd.runtime,
    `${id} loads its replacement`,
    () => entry.activity === 'reconfiguring' && entry.state.kind === 'loading',
  );
  return { request, gate, slots, body };
}

/** Asserts a successful registration response. */
export async function assertRegistered(t: Tracked, id: string, reconfigured: boolean): Promise<void> {
  const res = await t.promise;
  assert.equal(res.status, 200, res.body.toString());
  assert.deepEqual(res.json, { id, loaded: true, reconfigured });
}

/** Asserts a bulk unload's 200 and its body. */
export async function assertBulk(
  bulk: Tracked,
  body: { unloaded: string[]; not_found: string[] },
): Promise<void> {
  const res = await bulk.promise;
  assert.equal(res.status, 200, res.body.toString());
  assert.deepEqual(res.json, body);
}

/** Asserts that every one of `ids` is listed unloaded and idle by GET /v1/models. */
export async function assertAllUnloaded(c: ContractServer, slots: number, ids: string[]): Promise<void> {
  for (const id of ids) assert.deepEqual(await view(c, id), unloadedView(slots), `${id} is unloaded`);
}

export async function assertUnloaded(t: Tracked | Promise<HttpResult>, id: string): Promise<void> {
  const res = await ('promise' in t ? t.promise : t);
  assert.equal(res.status, 200, res.body.toString());
  assert.deepEqual(res.json, { id, loaded: false });
}
