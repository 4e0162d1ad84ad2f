/**
 * The short-lived keys of OpenAI's ephemeral-key flow (`POST /v1/realtime/client_secrets` and the
 * beta `/v1/realtime/transcription_sessions`): a server holding a real key mints one for a browser,
 * which opens a realtime session with it and can do nothing else. Keys live in this process only
 * (a restart forgets them), each for a bounded life, and only so many at once.
 */
import { createHash, randomBytes } from 'node:crypto';
import { VoxdError } from '../../errors.js';
import type { Clock } from '../../util/clock.js';
import { EPHEMERAL_PREFIX } from '../transport/auth.js';
import type { InputFormat } from './audio-format.js';
import type { ServerVad } from './server-vad.js';

/** OpenAI's bounds on `expires_after.seconds`, and its default. */
export const MIN_LIFE_S = 10;
export const MAX_LIFE_S = 7200;
export const DEFAULT_LIFE_S = 600;

/** What a key was minted with: the starting point of the sessions it opens. */
export interface SecretSession {
  /** The session's model (the upgrade's `?model=` wins over it, as OpenAI lets the connection override). */
  model: string | undefined;
  /** The rest of the session's settings as the minting request gave them; absent: voxd's defaults. */
  start?: SessionStart;
}

/** A session's settings before its first event (a minted key's, checked when it was minted). */
export interface SessionStart {
  format: InputFormat;
  language: string | undefined;
  prompt: string | undefined;
  include: string[];
  vad: ServerVad | undefined;
  beta: boolean;
}

interface Minted {
  digest: string;
  /** On the server's clock (milliseconds, not epoch). */
  expiresAt: number;
  session: SecretSession;
}

export class ClientSecrets {
  readonly #clock: Clock;
  readonly #max: number;
  /**
   * By the SHA-256 of the key: the key itself is never kept, and a lookup hashes what the client
   * sent, so how long a lookup takes says nothing about any live key.
   */
  readonly #live = new Map<string, Minted>();
  /** The same keys, soonest expiry first: expired ones are dropped from the top, never by a scan. */
  readonly #expiries: Minted[] = [];

  /** `max`: live keys at most; 0 mints none. */
  constructor(clock: Clock, max: number) {
    this.#clock = clock;
    this.#max = max;
  }

  /** Keys alive now. */
  get size(): number {
    this.#drop();
    return this.#live.size;
  }

  /**
   * A new key for `lifeS` seconds (MIN_LIFE_S to MAX_LIFE_S, checked by the route's schema).
   * Throws E_FORBIDDEN when minting is off, E_TOO_MANY_CLIENT_SECRETS when the cap is reached.
   */
  mint(session: SecretSession, lifeS: number): string {
    if (this.#max === 0)
      throw new VoxdError(
        'E_FORBIDDEN',
        'minting client secrets is off on this server (max_client_secrets is 0)',
      );
    this.#drop();
    if (this.#live.size >= this.#max) {
      const soonest = this.#expiries[0]!.expiresAt - this.#clock.now();
      throw new VoxdError(
        'E_TOO_MANY_CLIENT_SECRETS',
        `${this.#max} client secrets are live (max_client_secrets); the next expires in ${Math.ceil(soonest / 1000)} s`,
        { retryAfterS: Math.max(1, Math.ceil(soonest / 1000)) },
      );
    }
    // 256 random bits: as hard to guess as an API key, and base64url is a valid subprotocol token.
    const value = `${EPHEMERAL_PREFIX}${randomBytes(32).toString('base64url')}`;
    const minted: Minted = {
      digest: digestOf(value),
      expiresAt: this.#clock.now() + lifeS * 1000,
      session: { ...session },
    };
    this.#live.set(minted.digest, minted);
    push(this.#expiries, minted);
    return value;
  }

  /** The session a live key was minted with; undefined for a key unknown or expired. */
  find(value: string): SecretSession | undefined {
    this.#drop();
    return this.#live.get(digestOf(value))?.session;
  }

  #drop(): void {
    const now = this.#clock.now();
    const heap = this.#expiries;
    while (heap.length > 0 && heap[0]!.expiresAt <= now) this.#live.delete(pop(heap).digest);
  }
}

const digestOf = (value: string) => createHash('sha256').update(value, 'utf8').digest('base64');

/** A binary min-heap on expiresAt: O(log n) a key in and out, however the lives are mixed. */
function push(heap: Minted[], item: Minted): void {
  heap.push(item);
  let i = heap.length - 1;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (heap[parent]!.expiresAt <= item.expiresAt) break;
    heap[i] = heap[parent]!;
    i = parent;
  }
  heap[i] = item;
}

function pop(heap: Minted[]): Minted {
  const top = heap[0]!;
  const last = heap.pop()!;
  if (heap.length === 0) return top;
  let i = 0;
  for (;;) {
    const left = 2 * i + 1;
    if (left >= heap.length) break;
    const right = left + 1;
    const child = right < heap.length && heap[right]!.expiresAt < heap[left]!.expiresAt ? right : left;
    if (heap[child]!.expiresAt >= last.expiresAt) break;
    heap[i] = heap[child]!;
    i = child;
  }
  heap[i] = last;
  return top;
}
