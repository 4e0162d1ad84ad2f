/**
 * The `voxd` command run as a child process, exactly as users run it: a process wrapper whose waits
 * all have deadlines, and a temporary folder for the config files a test file writes.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { fileURLToPath } from 'node:url';
import { withDeadline } from './voxd.js';

const MAIN = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/**
 * voxd's data folder for the children of this test process (their default models root is made
 * there at startup), so tests never write under the user's home; removed when the process ends.
 */
const DATA_DIR = mkdtempSync(join(tmpdir(), 'voxd-cli-data-'));
process.once('exit', () => rmSync(DATA_DIR, { recursive: true, force: true }));

/** Every wait on a child gives up after this long. */
export const DEADLINE_MS = 10_000;
export const LISTENING = /voxd listening on (http:\/\/127\.0\.0\.1:(\d+))\n/;

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** One `voxd` child process with its output collected as it arrives. */
export class VoxdProcess {
  readonly child: ChildProcess;
  stdout = '';
  stderr = '';
  /** Settles once the process has exited and its output streams are closed. */
  readonly closed: Promise<Exit>;
  readonly #listeners = new Set<() => void>();
  #exited = false;

  constructor(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) {
    this.child = spawn(process.execPath, [MAIN, ...args], {
      cwd: options.cwd ?? REPO_ROOT,
      // The tests serve the fixture engine; a test that wants it off passes VOXD_ENABLE_FIXTURE: ''.
      env: { VOXD_DATA_DIR: DATA_DIR, VOXD_ENABLE_FIXTURE: '1', ...(options.env ?? process.env) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout!.setEncoding('utf8');
    this.child.stderr!.setEncoding('utf8');
    this.child.stdout!.on('data', (chunk: string) => {
      this.stdout += chunk;
      this.#notify();
    });
    this.child.stderr!.on('data', (chunk: string) => {
      this.stderr += chunk;
      this.#notify();
    });
    this.closed = new Promise<Exit>((resolve, reject) => {
      this.child.once('error', reject);
      this.child.once('close', (code, signal) => {
        this.#exited = true;
        this.#notify();
        resolve({ code, signal });
      });
    });
    // A test that fails before awaiting `closed` must not leave an unhandled rejection behind.
    this.closed.catch(() => {});
  }

  #notify(): void {
    for (const listener of this.#listeners) listener();
  }

  /** Lines of stderr, without the empty tail after the last newline. */
  get stderrLines(): string[] {
    return this.stderr.split('\n').filter((line) => line.length > 0);
  }

  /** Resolves with the match once stderr matches; rejects at the deadline or if the process ends first. */
  waitForStderr(pattern: RegExp, what: string, ms = DEADLINE_MS): Promise<RegExpMatchArray> {
    let check = () => {};
    const found = new Promise<RegExpMatchArray>((resolve, reject) => {
      check = () => {
        const match = this.stderr.match(pattern);
        if (match) resolve(match);
        else if (this.#exited) reject(new Error(`voxd exited before ${what}`));
      };
      this.#listeners.add(check);
      check();
    });
    return withDeadline(found, what, ms)
      .catch((err: unknown) => {
        throw new Error(`${err instanceof Error ? err.message : String(err)}; stderr:\n${this.stderr}`);
      })
      .finally(() => this.#listeners.delete(check));
  }

  /** The base URL from the "voxd listening on" line. */
  async listening(): Promise<{ url: string; port: number }> {
    const match = await this.waitForStderr(LISTENING, 'the listening line');
    return { url: match[1]!, port: Number(match[2]) };
  }

  /** Waits for the process to end on its own. */
  exit(ms = DEADLINE_MS): Promise<Exit> {
    return withDeadline(this.closed, 'voxd to exit', ms).catch((err: unknown) => {
      throw new Error(`${err instanceof Error ? err.message : String(err)}; stderr:\n${this.stderr}`);
    });
  }

  /**
   * Sends SIGTERM to this child (by its pid, through its ChildProcess) unless it has already ended, and
   * waits for it; a child that ignores SIGTERM past the deadline is killed with SIGKILL.
   */
  async stop(): Promise<Exit> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    try {
      return await this.exit();
    } catch (err) {
      this.child.kill('SIGKILL');
      await this.closed.catch(() => {});
      throw err;
    }
  }
}

/**
 * A temporary folder for config files, made before the calling file's tests and removed after them.
 * Call it at the top level of a test file: it registers the `before` and `after` hooks there.
 */
export function configFolder(prefix: string) {
  let dir = '';
  let count = 0;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), prefix));
  });
  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    /** The folder (once the `before` hook has run). */
    get dir(): string {
      return dir;
    },
    /** Writes a config file (an object as JSON, a string as is) and returns its absolute path. */
    write(config: Record<string, unknown> | string): string {
      count += 1;
      const path = join(dir, `server-${count}.json`);
      writeFileSync(path, typeof config === 'string' ? config : JSON.stringify(config));
      return path;
    },
  };
}
