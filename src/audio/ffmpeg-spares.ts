/**
 * ffmpeg encoders started ahead of need. Starting ffmpeg takes 100-250 ms here, longer than
 * synthesizing a first sentence, so a compressed speech answer waited for it before its first
 * byte. A spare is an encoder process already started for one command line (format, rate,
 * channels), idle on its empty input pipe; the next encoder for that line takes it instead of
 * starting one, and another spare is started for the one after.
 *
 * Bounded: at most one spare per command line and `max` in all (the least recently used one goes
 * first); each retires after `idleMs` unused, so a server that stops asking for a format keeps no
 * process for it. A spare holds none of the codec's child slots (it does no work until taken; the
 * encoder that takes it holds one as any does) and never keeps node running (its handles are unref'd
 * until taken). `close()` kills every spare and starts no more. A spare whose parent dies sees its
 * input pipe close and exits with nothing to encode.
 */
import type { ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';

interface Spare {
  child: ChildProcess;
  timer: NodeJS.Timeout;
}

/** Sockets' unref/ref, which node's child pipes have but their stream types do not declare. */
type Refable = { ref?: () => void; unref?: () => void };

function setRef(child: ChildProcess, on: boolean): void {
  if (on) child.ref();
  else child.unref();
  for (const pipe of [child.stdin, child.stdout, child.stderr] as (Writable | Readable | null)[]) {
    const handle = pipe as unknown as Refable | null;
    if (on) handle?.ref?.();
    else handle?.unref?.();
  }
}

export class EncoderSpares {
  /** By command line, least recently used first (a Map keeps insertion order). */
  readonly #spares = new Map<string, Spare>();
  #closed = false;

  constructor(
    /** Starts an encoder process for a command line (the codec's own spawn, so it is counted). */
    private readonly spawn: (args: string[]) => ChildProcess,
    private readonly max: number,
    private readonly idleMs: number,
  ) {}

  /** Spares waiting now (for tests). */
  get size(): number {
    return this.#spares.size;
  }

  /**
   * An encoder process for `args`: the spare if one is ready, else a new one. Either way a spare
   * for the next request with the same line is started once this one's process has exited: not
   * sooner, so starting it (100+ ms of CPU) does not compete with this request's synthesis.
   */
  take(args: string[]): ChildProcess {
    const key = args.join('\0');
    const spare = this.#spares.get(key);
    this.#spares.delete(key);
    let child: ChildProcess | undefined;
    if (spare) {
      clearTimeout(spare.timer);
      // One that died while it waited (killed from outside) is not handed out.
      if (spare.child.exitCode === null && spare.child.signalCode === null) {
        child = spare.child;
        setRef(child, true);
      } else spare.child.kill('SIGKILL');
    }
    child ??= this.spawn(args);
    if (this.max > 0 && !this.#closed) child.once('close', () => this.#refill(key, args));
    return child;
  }

  /** Kills every spare; none is started after this. */
  close(): void {
    this.#closed = true;
    for (const key of [...this.#spares.keys()]) this.#retire(key);
  }

  #refill(key: string, args: string[]): void {
    if (this.#closed || this.#spares.has(key)) return;
    if (this.#spares.size >= this.max) this.#retire(this.#spares.keys().next().value!);
    let child: ChildProcess;
    try {
      child = this.spawn(args);
    } catch {
      // No spare (ffmpeg gone, no process left): the next request starts its own and says why.
      return;
    }
    setRef(child, false);
    const timer = setTimeout(() => this.#retire(key), this.idleMs);
    timer.unref();
    this.#spares.set(key, { child, timer });
    // One that exits while it waits is forgotten at once.
    child.once('close', () => {
      if (this.#spares.get(key)?.child === child) {
        clearTimeout(timer);
        this.#spares.delete(key);
      }
    });
  }

  #retire(key: string): void {
    const spare = this.#spares.get(key);
    if (!spare) return;
    this.#spares.delete(key);
    clearTimeout(spare.timer);
    spare.child.kill('SIGKILL');
  }
}
