/**
 * Prometheus metrics, in a registry of each server's own (several servers in one process, as in
 * the tests, count apart). The request path observes through label children bound once per
 * route, method, status and model, so a request costs map lookups and no allocation; gauges read
 * the runtime when scraped rather than being kept up to date on every request.
 */
import { getHeapCodeStatistics, getHeapStatistics } from 'node:v8';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { mallocStats } from '../util/libc.js';
import { residentBytes } from './process-memory.js';

/** Request and run latencies: 5 ms to a minute. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/**
 * How often prom-client's event-loop delay histogram samples (`nodejs_eventloop_lag_*`). Its
 * default, 10 ms, is a libuv timer that wakes the main thread 100 times a second, idle or not: on a
 * machine whose cores the engines' runners keep busy, each wake-up takes a runner off its core for
 * a moment. Every stall of the loop longer than this is still seen whole, and shorter ones in
 * proportion to their length.
 */
export const EVENT_LOOP_SAMPLE_MS = 200;
/** Processing time over audio duration: 0.01 (100x faster than real time) to 10. */
const RTF_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10];

/** Methods kept as labels; any other is counted as OTHER, so clients cannot add label values. */
const METHODS = new Set(['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS']);

/** The route label of a request whose path is no route's: one value for every such path. */
export const UNKNOWN_ROUTE = 'unknown';

/** The streaming protocols built on the session shell (src/session/). */
export type SessionProtocol = 'realtime' | 'wyoming' | 'bridge' | 'deepgram_listen' | 'deepgram_speak';
/** Why a streaming session ended (voxd_sessions_ended_total's reason label). */
export type SessionEndReason = 'client_gone' | 'idle' | 'expired' | 'send_timeout' | 'shutdown' | 'error';

/** How a model request ended (voxd_model_requests_total's outcome label). */
export type ModelOutcome = 'ok' | 'error' | 'cancelled' | 'rejected';

/** One model's state at scrape time. */
export interface ModelSample {
  id: string;
  loaded: boolean;
  slots: number;
  activeSlots: number;
  queuedRequests: number;
  /** The estimate of the last load, in bytes; null before a load. */
  memoryEstimateBytes: number | null;
  /** The runner processes serving the model now (none while unloaded or not yet called). */
  runnerProcessIds: readonly number[];
}

interface HttpChildren {
  duration: Histogram.Internal<'route' | 'method'>;
  byStatus: Map<number, Counter.Internal>;
}

interface ModelChildren {
  outcomes: Map<ModelOutcome, Counter.Internal>;
  inference: Histogram.Internal<'model' | 'task'>;
  rtf: Histogram.Internal<'model' | 'task'>;
}

export class Metrics {
  readonly registry = new Registry();
  readonly #httpRequests: Counter<'route' | 'method' | 'status'>;
  readonly #httpDuration: Histogram<'route' | 'method'>;
  readonly #modelRequests: Counter<'model' | 'task' | 'outcome'>;
  readonly #queueWait: Histogram<'model'>;
  readonly #inference: Histogram<'model' | 'task'>;
  readonly #rtf: Histogram<'model' | 'task'>;
  readonly #firstOutput: Histogram<'model' | 'route'>;
  readonly #restarts: Counter<'model'>;
  readonly #realtimeSessions: Gauge;
  readonly #realtimeTurns: Counter<'model' | 'outcome'>;
  readonly #realtimeLatency: Histogram<'model'>;
  readonly #exchanges: Counter<'protocol' | 'kind' | 'model' | 'outcome'>;
  readonly #wyomingConnections: Gauge;
  readonly #deepgramSessions: Gauge<'protocol'>;
  readonly #sessionsEnded: Counter<'protocol' | 'reason'>;
  /** What the server-wide gauges read (byte budget, connections), once the front ends share it. */
  #shared: { bytesHeld(): number; connections(): number } | undefined;
  /** The live ephemeral realtime keys, once the HTTP server keeps them. */
  #clientSecrets: (() => number) | undefined;
  /** route → method → children. */
  readonly #http = new Map<string, Map<string, HttpChildren>>();
  /** model → task → children. */
  readonly #models = new Map<string, Map<string, ModelChildren>>();
  readonly #queueWaitOf = new Map<string, Histogram.Internal<'model'>>();

  constructor(version: string, samples: () => Iterable<ModelSample>) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
    const counter = <L extends string>(name: string, help: string, labelNames: L[]) =>
      new Counter({ name, help, labelNames, registers });
    const histogram = <L extends string>(
      name: string,
      help: string,
      labelNames: L[],
      buckets = LATENCY_BUCKETS,
    ) => new Histogram({ name, help, labelNames, buckets, registers });
    this.#httpRequests = counter(
      'voxd_http_requests_total',
      'HTTP requests answered, by route template, method and status',
      ['route', 'method', 'status'],
    );
    this.#httpDuration = histogram(
      'voxd_http_request_duration_seconds',
      'Time from a request arriving to its response (or stream) ending',
      ['route', 'method'],
    );
    this.#modelRequests = counter(
      'voxd_model_requests_total',
      'Model runs and admissions, by outcome: ok, error, cancelled (client left, shutdown), rejected (not admitted)',
      ['model', 'task', 'outcome'],
    );
    this.#queueWait = histogram('voxd_queue_wait_seconds', 'Time a request waited for a slot of its model', [
      'model',
    ]);
    this.#inference = histogram(
      'voxd_inference_duration_seconds',
      'Time a model spent on a run, once it had its slot',
      ['model', 'task'],
    );
    this.#rtf = histogram(
      'voxd_realtime_factor',
      'Run time over the duration of the audio it took or made (below 1: faster than real time)',
      ['model', 'task'],
      RTF_BUCKETS,
    );
    this.#firstOutput = histogram(
      'voxd_stream_first_output_seconds',
      "Time from a streamed run's start (after admission) to its first audio or text, as ttft_ms",
      ['model', 'route'],
    );
    this.#restarts = counter(
      'voxd_runner_restarts_total',
      'Engine runners lost under requests: crashed, or killed to stop one request while others ran on it',
      ['model'],
    );
    this.#realtimeSessions = new Gauge({
      name: 'voxd_realtime_sessions',
      help: 'Realtime WebSocket sessions open now',
      registers,
    });
    this.#realtimeTurns = counter(
      'voxd_realtime_turns_total',
      'Realtime turns by how they ended: completed, failed (an error event), cancelled (the client left)',
      ['model', 'outcome'],
    );
    this.#realtimeLatency = histogram(
      'voxd_realtime_transcript_seconds',
      "Time from a realtime turn's commit to its completed transcript (queue, load and run included)",
      ['model'],
    );
    this.#exchanges = counter(
      'voxd_exchanges_total',
      'Exchanges of the non-HTTP protocols (protocol: wyoming; deepgram_listen, an utterance; deepgram_speak, a flushed segment), by kind (asr, tts, vad) and how they ended: completed, failed (an error told to the client), cancelled (the client left or cleared it)',
      ['protocol', 'kind', 'model', 'outcome'],
    );
    this.#wyomingConnections = new Gauge({
      name: 'voxd_wyoming_connections',
      help: 'Wyoming connections open now',
      registers,
    });
    this.#deepgramSessions = new Gauge({
      name: 'voxd_deepgram_sessions',
      help: 'Deepgram WebSocket sessions open now (protocol: deepgram_listen, deepgram_speak)',
      labelNames: ['protocol'],
      registers,
    });
    this.#sessionsEnded = counter(
      'voxd_sessions_ended_total',
      'Streaming sessions (protocol: realtime, wyoming, bridge, deepgram_listen, deepgram_speak) by why they ended: client_gone, idle (no whole event for the idle timeout, or an event begun and not finished in time), expired (the longest life), send_timeout (the client stopped reading), shutdown, error',
      ['protocol', 'reason'],
    );
    const gauge = (name: string, help: string, read: (s: ModelSample) => number | null) =>
      new Gauge({
        name,
        help,
        labelNames: ['model'],
        registers,
        collect() {
          this.reset();
          for (const sample of samples()) {
            const value = read(sample);
            if (value !== null) this.labels(sample.id).set(value);
          }
        },
      });
    gauge('voxd_queued_requests', 'Requests waiting for a slot', (s) => s.queuedRequests);
    gauge('voxd_active_slots', 'Slots running a request now', (s) => s.activeSlots);
    gauge('voxd_slots', 'Slots configured for the model', (s) => s.slots);
    gauge(
      'voxd_model_memory_estimate_bytes',
      'Memory the model was estimated to take at its last load (weights and runners), while loaded',
      (s) => (s.loaded ? s.memoryEstimateBytes : null),
    );
    new Gauge({
      name: 'voxd_model_resident_memory_bytes',
      help: "Resident memory of the model's runner processes now (Linux /proc), while any runs",
      labelNames: ['model'],
      registers,
      async collect() {
        this.reset();
        const models = [...samples()].filter((s) => s.runnerProcessIds.length > 0);
        const totals = await Promise.all(
          models.map(async (s) =>
            (await Promise.all(s.runnerProcessIds.map(residentBytes))).reduce((a, b) => a + b, 0),
          ),
        );
        for (const [i, sample] of models.entries())
          if (totals[i]! > 0) this.labels(sample.id).set(totals[i]!);
      },
    });
    /** A gauge without labels, read when scraped. */
    const reading = (name: string, help: string, read: () => number) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(read());
        },
      });
    reading(
      'voxd_client_bytes_held',
      'Client bytes held in memory now against max_inflight_body_bytes: request bodies and what streaming sessions hold (realtime buffers and waiting turns, Wyoming utterances, bridge frames waiting, Deepgram listen audio and speak text)',
      () => this.#shared?.bytesHeld() ?? 0,
    );
    reading(
      'voxd_connections',
      'Client connections open now under max_connections, over HTTP and Wyoming (a WebSocket is its HTTP connection)',
      () => this.#shared?.connections() ?? 0,
    );
    reading(
      'voxd_client_secrets',
      'Ephemeral realtime keys (/v1/realtime/client_secrets) alive now, against max_client_secrets',
      () => this.#clientSecrets?.() ?? 0,
    );
    reading('voxd_models_loaded', 'Models loaded now', () => {
      let loaded = 0;
      for (const sample of samples()) if (sample.loaded) loaded++;
      return loaded;
    });
    reading(
      'voxd_heap_code_bytes',
      'V8 heap bytes that are compiled code and bytecode (part of nodejs_heap_size_used_bytes): grows as code paths are first run and optimised, and stops',
      () => {
        const code = getHeapCodeStatistics();
        return code.code_and_metadata_size + code.bytecode_and_metadata_size;
      },
    );
    reading(
      'voxd_heap_resident_bytes',
      'V8 heap bytes resident in memory (total_physical_size): RSS less this is the memory outside the JS heap',
      () => getHeapStatistics().total_physical_size,
    );
    // glibc only: elsewhere the allocator cannot be asked, and the gauges are left out.
    if (mallocStats()) {
      reading(
        'voxd_malloc_in_use_bytes',
        'Bytes the C allocator has handed out and not had back: native allocations alive now, ArrayBuffer contents among them',
        () => mallocStats()?.inUse ?? 0,
      );
      reading(
        'voxd_malloc_free_bytes',
        'Bytes freed and kept by the C allocator for reuse: part of RSS that holds nothing',
        () => mallocStats()?.free ?? 0,
      );
    }
    new Gauge({
      name: 'voxd_info',
      help: 'Always 1; the server version as a label',
      labelNames: ['version'],
      registers,
    })
      .labels(version)
      .set(1);
  }

  /** One answered request; `route` is the route's path template or UNKNOWN_ROUTE. */
  observeHttp(route: string, method: string, status: number, seconds: number): void {
    const m = METHODS.has(method) ? method : 'OTHER';
    let byMethod = this.#http.get(route);
    if (!byMethod) {
      byMethod = new Map();
      this.#http.set(route, byMethod);
    }
    let children = byMethod.get(m);
    if (!children) {
      children = { duration: this.#httpDuration.labels(route, m), byStatus: new Map() };
      byMethod.set(m, children);
    }
    let counter = children.byStatus.get(status);
    if (!counter) {
      counter = this.#httpRequests.labels(route, m, String(status));
      children.byStatus.set(status, counter);
    }
    counter.inc();
    children.duration.observe(seconds);
  }

  #model(model: string, task: string): ModelChildren {
    let byTask = this.#models.get(model);
    if (!byTask) {
      byTask = new Map();
      this.#models.set(model, byTask);
    }
    let children = byTask.get(task);
    if (!children) {
      children = {
        outcomes: new Map(),
        inference: this.#inference.labels(model, task),
        rtf: this.#rtf.labels(model, task),
      };
      byTask.set(task, children);
    }
    return children;
  }

  outcome(model: string, task: string, outcome: ModelOutcome): void {
    const children = this.#model(model, task);
    let counter = children.outcomes.get(outcome);
    if (!counter) {
      counter = this.#modelRequests.labels(model, task, outcome);
      children.outcomes.set(outcome, counter);
    }
    counter.inc();
  }

  queueWait(model: string, seconds: number): void {
    let child = this.#queueWaitOf.get(model);
    if (!child) {
      child = this.#queueWait.labels(model);
      this.#queueWaitOf.set(model, child);
    }
    child.observe(seconds);
  }

  /** A finished run; `audioSeconds` is the audio it took or made, when there was any. */
  ran(model: string, task: string, seconds: number, audioSeconds: number | undefined): void {
    const children = this.#model(model, task);
    children.inference.observe(seconds);
    if (audioSeconds !== undefined && audioSeconds > 0) children.rtf.observe(seconds / audioSeconds);
    this.outcome(model, task, 'ok');
  }

  /** A stream's first audio or text, `seconds` after its request arrived. Streams are few: no cache. */
  firstOutput(model: string, route: string, seconds: number): void {
    this.#firstOutput.labels(model, route).observe(seconds);
  }

  /** A realtime session opened (+1) or closed (-1). */
  realtimeSession(delta: 1 | -1): void {
    this.#realtimeSessions.inc(delta);
  }

  /** A Wyoming connection opened (+1) or closed (-1). */
  wyomingConnection(delta: 1 | -1): void {
    this.#wyomingConnections.inc(delta);
  }

  /** A Deepgram session opened (+1) or closed (-1). */
  deepgramSession(protocol: 'deepgram_listen' | 'deepgram_speak', delta: 1 | -1): void {
    this.#deepgramSessions.inc({ protocol }, delta);
  }

  /** The server-wide readings (the byte budget and the connection count every front end shares). */
  watchShared(shared: { bytesHeld(): number; connections(): number }): void {
    this.#shared = shared;
  }

  /** What voxd_client_secrets reads: the HTTP server's count of live ephemeral keys. */
  watchClientSecrets(live: () => number): void {
    this.#clientSecrets = live;
  }

  /** A streaming session ended, and why. */
  sessionEnded(protocol: SessionProtocol, reason: SessionEndReason): void {
    this.#sessionsEnded.labels(protocol, reason).inc();
  }

  /** An exchange of a non-HTTP protocol ended (`model`: a registered model's id). */
  exchange(
    protocol: 'wyoming' | 'deepgram_listen' | 'deepgram_speak',
    kind: 'asr' | 'tts' | 'vad',
    model: string,
    outcome: 'completed' | 'failed' | 'cancelled',
  ): void {
    this.#exchanges.labels(protocol, kind, model, outcome).inc();
  }

  /** A realtime turn ended; `seconds` from its commit, for a completed one. */
  realtimeTurn(model: string, outcome: 'completed' | 'failed' | 'cancelled', seconds?: number): void {
    this.#realtimeTurns.labels(model, outcome).inc();
    if (seconds !== undefined) this.#realtimeLatency.labels(model).observe(seconds);
  }

  runnerRestarted(model: string): void {
    this.#restarts.labels(model).inc();
  }

  /** The exposition text and its content type. */
  async scrape(): Promise<{ text: string; contentType: string }> {
    return { text: await this.registry.metrics(), contentType: this.registry.contentType };
  }
}
