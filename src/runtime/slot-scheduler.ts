/**
 * Per-model admission: one FIFO of waiters in the order callers enter it, shared leases (one slot
 * each) for requests and an exclusive lease for management. The head of the queue blocks everyone
 * behind it, so a waiting manager keeps later requests out even when slots are free, and waits for
 * all earlier admitted and queued work.
 *
 * The serial runtime is this scheduler with capacity 1; the parallel runtime raises the capacity
 * to the model's slot count. No method blocks: every wait is a promise that a signal can abandon.
 */
import { busy, VoxdError } from '../errors.js';
import { Changes } from '../util/changes.js';
import type { Clock, Timer } from '../util/clock.js';
import type { AbortSource } from '../util/lazy-abort.js';
import { QueueBound } from './queue-bound.js';

export type LeaseKind = 'request' | 'manager';

export interface Lease {
  readonly kind: LeaseKind;
  readonly grantedAt: number;
  /** Gives the slot back; calling it again does nothing. */
  release(): void;
}

export interface AcquireOptions {
  /** Longest wait for admission in ms; 0 waits without limit. */
  timeoutMs: number;
  /** The caller going away: an AbortSignal, or a request's LazyAbort. */
  signal?: AbortSource;
}

export interface SchedulerSnapshot {
  capacity: number;
  activeRequests: number;
  queuedRequests: number;
  queuedManagers: number;
  managerActive: boolean;
  /** How long the oldest waiter has waited, in ms; 0 with an empty queue. */
  oldestWaitMs: number;
}

interface Waiter {
  readonly kind: LeaseKind;
  readonly enqueuedAt: number;
  grant(): void;
  /** Sends the waiter away with `reason`; it leaves the queue holding nothing. */
  refuse(reason: unknown): void;
}

class SchedulerLease implements Lease {
  #released = false;
  constructor(
    readonly kind: LeaseKind,
    readonly grantedAt: number,
    private readonly onRelease: (lease: SchedulerLease) => void,
  ) {}

  release(): void {
    if (this.#released) return;
    this.#released = true;
    this.onRelease(this);
  }
}

export class SlotScheduler {
  readonly #model: string;
  readonly #clock: Clock;
  #capacity: number;
  readonly #queue: Waiter[] = [];
  readonly #requests = new Set<SchedulerLease>();
  #manager: SchedulerLease | null = null;
  /** Shared initialisations in progress; a manager may not start while one runs. */
  #pins = 0;
  /** Request waiters in #queue, counted as they come and go so the bound costs no scan. */
  #queuedRequests = 0;
  /** max_queued_requests, the saturation mark it drives and the hold times behind Retry-After. */
  readonly bound = new QueueBound();

  /** Told of every change of the queue and the leases (the runtime shares one across its models). */
  readonly changes: Changes;

  constructor(model: string, capacity: number, clock: Clock, changes = new Changes()) {
    this.changes = changes;
    this.#model = model;
    this.#capacity = capacity;
    this.#clock = clock;
  }

  get capacity(): number {
    return this.#capacity;
  }

  /** Changes the number of request slots; only the holder of the manager lease may do this. */
  setCapacity(capacity: number): void {
    this.#capacity = capacity;
    this.#pump();
  }

  /** True when nothing holds, waits for or initialises this model. */
  get idle(): boolean {
    return (
      this.#queue.length === 0 && this.#requests.size === 0 && this.#manager === null && this.#pins === 0
    );
  }

  snapshot(): SchedulerSnapshot {
    const now = this.#clock.now();
    const queuedRequests = this.#queuedRequests;
    return {
      capacity: this.#capacity,
      activeRequests: this.#requests.size,
      queuedRequests,
      queuedManagers: this.#queue.length - queuedRequests,
      managerActive: this.#manager !== null,
      oldestWaitMs: this.#queue.length ? Math.max(0, now - this.#queue[0]!.enqueuedAt) : 0,
    };
  }

  /**
   * Waits for a lease in FIFO order. Rejects with E_BUSY when a blocker has already overrun the
   * timeout or the wait times out, and with the signal's reason when the caller goes away; in both
   * cases the waiter has left the queue and holds nothing.
   */
  async acquire(kind: LeaseKind, { timeoutMs, signal }: AcquireOptions): Promise<Lease> {
    signal?.throwIfAborted();
    if (this.#queue.length === 0 && this.#canGrant(kind)) return this.#grant(kind);
    // Before the busy-timeout check: a full queue is refused whatever the holders' age.
    if (kind === 'request') this.checkRoom();
    if (timeoutMs > 0) this.#failFastIfOverdue(timeoutMs);

    return new Promise<Lease>((resolve, reject) => {
      let timer: Timer | undefined;
      const cleanup = () => {
        timer?.cancel();
        signal?.removeEventListener('abort', onAbort);
      };
      const leave = (reason: unknown) => {
        const index = this.#queue.indexOf(waiter);
        if (index < 0) return;
        this.#queue.splice(index, 1);
        this.#dequeued(kind);
        cleanup();
        reject(reason);
        // The leaver may have been the head that blocked others.
        this.#pump();
        this.changes.notify();
      };
      const onAbort = () => leave(signal?.reason);
      const waiter: Waiter = {
        kind,
        enqueuedAt: this.#clock.now(),
        grant: () => {
          cleanup();
          resolve(this.#grant(kind));
        },
        refuse: (reason) => leave(reason),
      };
      this.#queue.push(waiter);
      if (kind === 'request') this.bound.queued(++this.#queuedRequests);
      this.changes.notify();
      signal?.addEventListener('abort', onAbort, { once: true });
      if (timeoutMs > 0) {
        timer = this.#clock.after(timeoutMs, () => {
          const { activeRequests, managerActive } = this.snapshot();
          const running = activeRequests + (managerActive ? 1 : 0);
          leave(
            busy(
              `model '${this.#model}' is busy: timed out after ${timeoutMs} ms waiting for a slot ` +
                `(${running} running, ${this.#queue.length - 1} waiting; busy_timeout_ms=${timeoutMs})`,
            ),
          );
        });
      }
    });
  }

  /**
   * The lease at once when acquire() would grant it without a wait (nothing queued, a slot free),
   * else null; like acquire(), throws the signal's reason when the caller is gone. The request path
   * takes its lease here without a promise, and calls acquire() only when it must wait.
   */
  tryAcquire(kind: LeaseKind, signal?: AbortSource): Lease | null {
    signal?.throwIfAborted();
    return this.#queue.length === 0 && this.#canGrant(kind) ? this.#grant(kind) : null;
  }

  /**
   * Throws E_QUEUE_FULL when `places` more request waiters would pass max_queued_requests. Only a
   * request that must wait counts: one granted at once never queues. Managers are never counted or
   * refused: they are barriers, and refusing one would let a burst of requests lock out operators.
   */
  checkRoom(places = 1): void {
    // Free slots are granted only while nothing queues ahead and no manager holds the model.
    const free =
      this.#queue.length === 0 && !this.#manager ? Math.max(0, this.#capacity - this.#requests.size) : 0;
    if (places > free) this.bound.checkRoom(this.#model, this.#queuedRequests, places - free, this.#capacity);
  }

  /** Sends every waiter (requests and managers) away with `reason` (a shutdown); leases held stay. */
  refuseWaiting(reason: unknown): void {
    for (const waiter of [...this.#queue]) waiter.refuse(reason);
  }

  /** Takes the manager lease only if the model is entirely idle; never waits (eviction, idle retirement). */
  tryAcquireManager(): Lease | null {
    return this.idle ? this.#grant('manager') : null;
  }

  /** Keeps managers out while a shared initialisation runs; returns the release function. */
  pin(): () => void {
    this.#pins++;
    this.changes.notify();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#pins--;
      this.#pump();
      this.changes.notify();
    };
  }

  #dequeued(kind: LeaseKind): void {
    if (kind === 'request') this.bound.drained(--this.#queuedRequests);
  }

  #canGrant(kind: LeaseKind): boolean {
    if (this.#manager) return false;
    if (kind === 'request') return this.#requests.size < this.#capacity;
    return this.#requests.size === 0 && this.#pins === 0;
  }

  #grant(kind: LeaseKind): Lease {
    const lease = new SchedulerLease(kind, this.#clock.now(), (released) => this.#release(released));
    if (kind === 'manager') this.#manager = lease;
    else this.#requests.add(lease);
    this.changes.notify();
    return lease;
  }

  #release(lease: SchedulerLease): void {
    if (lease.kind === 'manager') {
      if (this.#manager === lease) this.#manager = null;
    } else if (this.#requests.delete(lease)) {
      this.bound.held(this.#clock.now() - lease.grantedAt);
    }
    this.#pump();
    this.changes.notify();
  }

  #pump(): void {
    while (this.#queue.length > 0 && this.#canGrant(this.#queue[0]!.kind)) {
      const waiter = this.#queue.shift()!;
      this.#dequeued(waiter.kind);
      waiter.grant();
    }
  }

  /**
   * The busy-timeout fail-fast rule: waiting is pointless when what blocks us has already run
   * longer than we are willing to wait. A manager that overran blocks everyone; otherwise, when
   * every occupied slot has overrun, no slot can be expected in time even if spare slots exist
   * behind a waiting manager.
   */
  #failFastIfOverdue(timeoutMs: number): void {
    const now = this.#clock.now();
    if (this.#manager) {
      const ran = now - this.#manager.grantedAt;
      if (ran > timeoutMs) {
        throw new VoxdError(
          'E_BUSY',
          `model '${this.#model}' is busy: a management operation has run ${Math.round(ran)} ms (busy_timeout_ms=${timeoutMs})`,
        );
      }
      return;
    }
    if (this.#requests.size === 0) return;
    let shortest = Number.POSITIVE_INFINITY;
    for (const lease of this.#requests) shortest = Math.min(shortest, now - lease.grantedAt);
    if (shortest > timeoutMs) {
      throw new VoxdError(
        'E_BUSY',
        `model '${this.#model}' is busy: current inference has run ${Math.round(shortest)} ms (busy_timeout_ms=${timeoutMs})`,
      );
    }
  }
}
