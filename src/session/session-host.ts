/**
 * What every front end of one server shares, made once by the composition root (src/app.ts): the
 * byte budget, the connection count under `max_connections`, the memory release and the clock.
 * HTTP requests and every streaming session (realtime, the bridge, Wyoming) draw on the same ones,
 * so a limit means the same thing whichever protocol a client speaks.
 */
import type { ServerConfig } from '../config/types.js';
import type { Metrics } from '../observability/metrics.js';
import type { Clock } from '../util/clock.js';
import { type MemoryRelease, memoryRelease } from '../util/release-memory.js';
import { ByteBudget } from './byte-budget.js';

/** Client connections open at once over every listener (HTTP, HTTPS, Wyoming). */
export class ConnectionCount {
  #open = 0;

  constructor(readonly max: number) {}

  get open(): number {
    return this.#open;
  }

  /** Counts one more when the cap allows it; false (counting nothing) when it is reached. */
  admit(): boolean {
    if (this.max > 0 && this.#open >= this.max) return false;
    this.#open++;
    return true;
  }

  release(): void {
    this.#open = Math.max(0, this.#open - 1);
  }
}

export interface SessionHost {
  clock: Clock;
  budget: ByteBudget;
  connections: ConnectionCount;
  memory: MemoryRelease;
  /** Where sessions count their ends; absent outside a server. */
  metrics?: Metrics;
}

export function sessionHost(
  config: Pick<ServerConfig, 'max_inflight_body_bytes' | 'max_connections'>,
  clock: Clock,
  memory: MemoryRelease = memoryRelease,
  metrics?: Metrics,
): SessionHost {
  const host: SessionHost = {
    clock,
    budget: new ByteBudget(config.max_inflight_body_bytes),
    connections: new ConnectionCount(config.max_connections),
    memory,
    metrics,
  };
  metrics?.watchShared({
    bytesHeld: () => host.budget.inUse,
    connections: () => host.connections.open,
  });
  return host;
}
