/**
 * What every session case of the fuzzer (sessions.ts, deepgram-sessions.ts) runs on: the target,
 * a case's run (its deadline, its problems, pacing on the wall clock, the speech), the clients a
 * case leaves running for the batch check to judge, and the WebSocket steps the clients share.
 */
import type WebSocket from 'ws';

/** What a session case needs of the server under test, found at the start of the run. */
export interface SessionTarget {
  url: string;
  wyomingPort: number;
  /** flite's speech, 16 kHz mono PCM16, made once through the server's own speech route. */
  speech: Buffer;
}

export interface SessionOutcome {
  /** 'client-closed': the client did its part (left, or went on in the background); a number: the upgrade's refusal. */
  status: 'client-closed' | 'closed' | 'hang' | number;
  /** What the server sent that it must not have. */
  problems: string[];
}

/** The models the target registers for these cases (test/fuzz/fuzz.ts startTarget). */
export const SESSION_MODELS = { live: 'pocketsphinx', tts: 'flite' } as const;

export const RATE = 16000;
/** Bytes of 16 kHz PCM16 per millisecond. */
export const BYTES_PER_MS = (RATE * 2) / 1000;

// ---------------------------------------------------------------- running

/** One case's clients: where their problems go, and how the deadline stops them. */
export class Run {
  readonly problems: string[] = [];
  stopped = false;
  readonly #stops = new Set<() => void>();
  constructor(
    readonly target: SessionTarget,
    readonly label: string,
  ) {}

  /** Registers what ends a client at once (the case's deadline). */
  onStop(stop: () => void): () => void {
    this.#stops.add(stop);
    return () => this.#stops.delete(stop);
  }

  stop(): void {
    this.stopped = true;
    for (const stop of [...this.#stops]) stop();
  }

  /** Waits `ms` of wall clock, or less when the case is stopped. */
  wait(ms: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const forget = this.onStop(done);
      function done() {
        clearTimeout(timer);
        forget();
        resolve();
      }
    });
  }

  /**
   * Sends `ms` of audio at real pace, `chunkMs` at a time, `piece(ms)` making each chunk. Paced
   * by the wall clock, as a microphone is: when the event loop falls behind (a loaded machine),
   * what fell due meanwhile goes out at once, so the audio still takes `ms` and no longer.
   */
  async paced(ms: number, chunkMs: number, piece: (ms: number) => void, gone: () => boolean): Promise<void> {
    const start = performance.now();
    let sent = 0;
    while (sent < ms && !gone() && !this.stopped) {
      const due = Math.min(ms, performance.now() - start + chunkMs);
      for (; sent < due; sent += chunkMs) piece(Math.min(chunkMs, ms - sent));
      await this.wait(chunkMs);
    }
  }

  /** `ms` of the speech from `offsetMs` on (wrapping round), as PCM16 bytes. */
  speech(offsetMs: number, ms: number): Buffer {
    const all = this.target.speech;
    const want = Math.max(2, Math.round(ms * BYTES_PER_MS) & ~1);
    const out = Buffer.alloc(want);
    let from = Math.round(offsetMs * BYTES_PER_MS) & ~1;
    for (let at = 0; at < want; ) {
      from %= all.length;
      const n = Math.min(want - at, all.length - from);
      all.copy(out, at, from, from + n);
      at += n;
      from += n;
    }
    return out;
  }
}

// ---------------------------------------------------------------- clients left running

/**
 * A client whose case is over but which goes on: `mustClose` ones (silent, trickling) must be
 * closed by the server before the batch check gives up; the others (pinging, not reading) are
 * ended by the fuzzer after the check, which has seen every slot free while they were connected.
 */
export interface Leftover {
  label: string;
  what: string;
  mustClose: boolean;
  closed: boolean;
  /** Problems the server showed after the case ended (an error event to a pinging client). */
  problems: string[];
  end(): void;
}

export const leftovers = new Set<Leftover>();

export function leaveRunning(
  run: Run,
  what: string,
  mustClose: boolean,
  end: () => void,
): { leftover: Leftover; closed: () => void } {
  const leftover: Leftover = {
    label: run.label,
    what,
    mustClose,
    closed: false,
    problems: run.problems,
    end,
  };
  leftovers.add(leftover);
  return {
    leftover,
    closed: () => {
      leftover.closed = true;
    },
  };
}

/** The clients the server should have closed by now and has not, and what it showed the others late. */
export function leftoverProblems(): string[] {
  const out: string[] = [];
  for (const l of leftovers) {
    if (l.mustClose && !l.closed) out.push(`${l.label}: ${l.what}: the server has not closed it`);
  }
  return out;
}

/** Clients still running after their case. */
export function leftoverCount(): number {
  return [...leftovers].filter((l) => !l.closed).length;
}

/** Problems the server showed clients after their case ended (read once, at the batch check). */
export function lateProblems(): string[] {
  const out: string[] = [];
  for (const l of leftovers) for (const p of l.problems.splice(0)) out.push(`${l.label}: ${p}`);
  return out;
}

/** Ends every client still running; the batch check has judged them. */
export function endLeftovers(): void {
  for (const l of leftovers) l.end();
  leftovers.clear();
}

// ---------------------------------------------------------------- WebSocket steps

export const wsBase = (url: string) => url.replace(/^http/, 'ws');

/** Opens a WebSocket: 'open', the refusal's status, or 'closed'. */
export function opened(ws: WebSocket): Promise<'open' | 'closed' | number> {
  return new Promise((resolve) => {
    ws.once('open', () => resolve('open'));
    ws.once('unexpected-response', (req, res) => {
      resolve(res.statusCode ?? 0);
      res.resume();
      req.destroy();
    });
    ws.once('close', () => resolve('closed'));
  });
}

/** Leaves `ws` to the server: it must close it (a close handshake answered, or its timeouts). */
export function keepUntilClosed(run: Run, ws: WebSocket, what: string, isClosed: () => boolean): void {
  if (isClosed()) return;
  const { closed } = leaveRunning(run, what, true, () => ws.terminate());
  ws.once('close', closed);
}
