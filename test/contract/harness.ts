/**
 * Puts models of a parallel-runtime server into the exact states of the behaviour contract, held
 * there by fixture-engine file gates (never by sleeps), so a test can perform one operation in
 * that state and assert the response, GET /v1/models and the fixture's record.
 *
 * Every model gets its own load and teardown gates, open by default (the files exist). Closing a
 * gate (deleting its file) makes the next load or teardown of that model wait until it reopens.
 */
import { rmSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { FixtureEvent } from '../../src/engines/fixture/fixture-record.js';
import type { ModelEntry } from '../../src/runtime/model-entry.js';
import {
  closeAfter,
  get,
  type HttpResult,
  post,
  startServer,
  type TestServer,
  tempDir,
  waitUntil,
  whenRuntime,
} from '../helpers/voxd.js';

export interface ToggleGate {
  path: string;
  open(): Promise<void>;
  close(): Promise<void>;
}

function toggleGate(path: string): ToggleGate {
  return { path, open: () => writeFile(path, ''), close: () => rm(path, { force: true }) };
}

export interface ContractModel {
  id: string;
  slots?: number;
  lazy?: boolean;
  task?: string;
  mode?: 'offline' | 'streaming';
  load_options?: Record<string, string>;
}

export class ContractServer {
  readonly gates = new Map<string, { load: ToggleGate; teardown: ToggleGate }>();
  readonly #runGates: ToggleGate[] = [];
  #runGateCount = 0;

  constructor(
    readonly s: TestServer,
    readonly gateDir: string,
    readonly specs: Map<string, ContractModel>,
    readonly parallel: boolean,
  ) {}

  get url(): string {
    return this.s.url;
  }

  entry(id: string): ModelEntry {
    return this.s.voxd.runtime.get(id);
  }

  /** The registration body of a model, as /v1/models/load takes it (its gates included). */
  body(id: string, change: Partial<ContractModel> = {}): Record<string, unknown> {
    const spec = { ...this.specs.get(id), ...change } as ContractModel;
    return {
      id,
      family: 'fixture',
      path: '.',
      task: spec.task ?? 'asr',
      ...(spec.mode ? { mode: spec.mode } : {}),
      ...(this.parallel ? { slots: spec.slots ?? 1 } : {}),
      load_options: {
        load_gate: this.gates.get(id)?.load.path ?? join(this.gateDir, `load-${id}`),
        teardown_gate: this.gates.get(id)?.teardown.path ?? join(this.gateDir, `teardown-${id}`),
        ...spec.load_options,
      },
    };
  }

  load(id: string): ToggleGate {
    return this.gates.get(id)!.load;
  }

  teardown(id: string): ToggleGate {
    return this.gates.get(id)!.teardown;
  }

  /** A fresh closed gate for holding one request in its run. */
  async runGate(): Promise<ToggleGate> {
    const gate = toggleGate(join(this.gateDir, `run-${++this.#runGateCount}`));
    this.#runGates.push(gate);
    await gate.close();
    return gate;
  }

  /** An inference request on a model; options go to the fixture engine. */
  infer(
    id: string,
    options: Record<string, string> = {},
    extra: Record<string, unknown> = {},
    signal?: AbortSignal,
  ) {
    return post(this.url, '/v1/tasks/run', { model: id, request: { text: 'x', options }, ...extra }, signal);
  }

  register(id: string, change: Partial<ContractModel> = {}) {
    return post(this.url, '/v1/models/load', this.body(id, change));
  }

  unload(id: string) {
    return post(this.url, '/v1/models/unload', { id });
  }

  bulkUnload(ids: string[]) {
    return post(this.url, '/v1/tasks/unload_models', { model_ids: ids });
  }

  // biome-ignore lint/suspicious/noExplicitAny: arbitrary JSON
  async status(id: string): Promise<any> {
    const { json } = await get(this.url, '/v1/models');
    return json.data.find((m: { id: string }) => m.id === id);
  }

  events(id: string, type?: FixtureEvent['type']): FixtureEvent[] {
    return this.s.fixture.record.of(id, type);
  }

  count(id: string, type: FixtureEvent['type']): number {
    return this.events(id, type).length;
  }

  snapshot(id: string) {
    return this.entry(id).scheduler.snapshot();
  }

  /** Waits until `count(id, type)` reaches n. */
  async waitCount(id: string, type: FixtureEvent['type'], n: number): Promise<void> {
    await waitUntil(`${id} has ${n} ${type} event(s)`, () => this.count(id, type) >= n);
  }

  // ---- putting a model into a contract state ----

  /** Loads the model (ready and idle). */
  async ready(id: string): Promise<void> {
    const res = await this.register(id);
    if (res.status !== 200) throw new Error(`could not load ${id}: ${res.status} ${res.body.toString()}`);
  }

  /**
   * A request starts a cold load that waits on the closed load gate. The request comes back
   * wrapped: an async function returning a bare promise would wait for it.
   */
  async loading(id: string): Promise<{ request: Promise<HttpResult> }> {
    await this.load(id).close();
    const request = this.infer(id);
    await whenRuntime(this.s.voxd.runtime, `${id} is loading`, () => this.entry(id).state.kind === 'loading');
    return { request };
  }

  /** Requests that run and hold their slots until the returned gate opens. */
  async running(id: string, count = 1): Promise<{ gate: ToggleGate; requests: Promise<HttpResult>[] }> {
    const gate = await this.runGate();
    const before = this.count(id, 'run-start');
    const requests = Array.from({ length: count }, () => this.infer(id, { run_gate: gate.path }));
    await this.waitCount(id, 'run-start', before + count);
    return { gate, requests };
  }

  /** A reconfiguration that holds the manager lease, held on the closed load gate. Returns the registration request. */
  async reconfiguring(
    id: string,
    change: Partial<ContractModel> = { load_options: { variant: 'next' } },
  ): Promise<{ request: Promise<HttpResult> }> {
    await this.load(id).close();
    const request = this.register(id, change);
    // One slot: held loading the replacement. More slots with new load inputs: held in the private
    // capacity probe, which waits on the same gate while the old pool is still published.
    const probing = () => (this.entry(id).config.slots ?? 1) > 1 && this.entry(id).state.kind === 'ready';
    await whenRuntime(
      this.s.voxd.runtime,
      `${id} is reconfiguring`,
      () =>
        this.entry(id).activity === 'reconfiguring' && (this.entry(id).state.kind === 'loading' || probing()),
    );
    return { request };
  }

  /** An unload whose teardown waits on the closed teardown gate; returns the unload request. */
  async unloading(id: string): Promise<{ request: Promise<HttpResult> }> {
    await this.teardown(id).close();
    const request = this.unload(id);
    await whenRuntime(
      this.s.voxd.runtime,
      `${id} is unloading`,
      () => this.entry(id).state.kind === 'unloading',
    );
    return { request };
  }

  async close(): Promise<void> {
    for (const { load, teardown } of this.gates.values()) await Promise.all([load.open(), teardown.open()]);
    await Promise.all(this.#runGates.map((g) => g.open()));
    await this.s.close();
    rmSync(this.gateDir, { recursive: true, force: true });
  }
}

/** Models with these ids and slot counts, in this order (one entry per key). */
export const slotted = (slots: Record<string, number>): ContractModel[] =>
  Object.entries(slots).map(([id, n]) => ({ id, slots: n }));

export interface ContractOptions {
  busy_timeout_ms?: number;
  max_loaded_models?: number;
  idle_unload_ms?: number;
  /** How long a shutdown lets running work finish (the server default, 30 s, when absent). */
  shutdown_timeout_ms?: number;
  clock?: import('../../src/util/clock.js').Clock;
  parallel?: boolean;
}

/**
 * A parallel-runtime server with management on. Models are registered at startup from `models`
 * (lazy unless said otherwise), each with open load and teardown gates.
 */
export async function contractServer(
  models: ContractModel[],
  options: ContractOptions = {},
): Promise<ContractServer> {
  const gateDir = tempDir('voxd-gates-');
  const specs = new Map(models.map((m) => [m.id, m]));
  const gates = new Map<string, { load: ToggleGate; teardown: ToggleGate }>();
  for (const m of models) {
    const g = {
      load: toggleGate(join(gateDir, `load-${m.id}`)),
      teardown: toggleGate(join(gateDir, `teardown-${m.id}`)),
    };
    await Promise.all([g.load.open(), g.teardown.open()]);
    gates.set(m.id, g);
  }
  const parallel = options.parallel ?? true;
  const config = models.map((m) => {
    const entry: Record<string, unknown> = {
      id: m.id,
      family: 'fixture',
      path: '.',
      task: m.task ?? 'asr',
      ...(m.mode ? { mode: m.mode } : {}),
      lazy: m.lazy ?? true,
      load_options: {
        load_gate: gates.get(m.id)!.load.path,
        teardown_gate: gates.get(m.id)!.teardown.path,
        ...m.load_options,
      },
    };
    if (parallel) entry['slots'] = m.slots ?? 1;
    return entry;
  });
  const s = await startServer(
    {
      ui_management: true,
      busy_timeout_ms: options.busy_timeout_ms ?? 0,
      max_loaded_models: options.max_loaded_models ?? 0,
      idle_unload_ms: options.idle_unload_ms ?? 0,
      ...(options.shutdown_timeout_ms === undefined
        ? {}
        : { shutdown_timeout_ms: options.shutdown_timeout_ms }),
      models: config,
    },
    { parallel, clock: options.clock },
  );
  const server = new ContractServer(s, gateDir, specs, parallel);
  for (const [id, g] of gates) server.gates.set(id, g);
  return server;
}

/** A `contractServer` for the length of `body`, closed however the body ends (see `closeAfter`). */
export function withContractServer<T>(
  models: ContractModel[],
  options: ContractOptions,
  body: (c: ContractServer) => Promise<T>,
): Promise<T>;
export function withContractServer<T>(
  models: ContractModel[],
  body: (c: ContractServer) => Promise<T>,
): Promise<T>;
export function withContractServer<T>(
  models: ContractModel[],
  ...rest: [(c: ContractServer) => Promise<T>] | [ContractOptions, (c: ContractServer) => Promise<T>]
): Promise<T> {
  const [options, body] = rest.length === 1 ? [{}, rest[0]] : rest;
  return closeAfter(contractServer(models, options), body);
}

/**
 * A starting situation for tests: `setUp` puts a fresh contract server with `models(n)` (started
 * with `options`, when a test gives them) into it. Each test runs its body in the situation, given
 * the server and what `setUp` returned, and the server is closed however the body ends.
 */
export function contractSituation<S extends object>(
  models: (n: number) => ContractModel[],
  setUp: (c: ContractServer, n: number) => Promise<S>,
): (
  n: number,
  body: (situation: S & { c: ContractServer }) => Promise<void>,
  options?: ContractOptions,
) => Promise<void> {
  return (n, body, options = {}) =>
    withContractServer(models(n), options, async (c) => body({ ...(await setUp(c, n)), c }));
}
