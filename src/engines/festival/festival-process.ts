/**
 * One Festival child process (`festival --pipe`) with the HTS voice loaded, speaking one text file
 * at a time into a WAV file. The process is started on the first call and kept between calls: its
 * start (loading the lexicon and the voice) costs 0.3-0.5 s, more than synthesising a sentence
 * (measured 0.13-0.16 s for 2.9 s of speech), so a process per sentence would triple a long text's
 * time. A cancelled call kills it at once (SIGKILL); the next call starts a fresh one.
 *
 * The text never enters Scheme: it is written to a file of our own, and only that file's path (and
 * the rate, a number we format) is sent to Festival, which reads the file with `tts_file` as plain
 * text. Nothing goes through a shell.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { EngineCrashed } from '../engine-worker.js';

/** Festival's own file of the only voice, installed by Debian's festvox-us-slt-hts. */
export const FESTIVAL_VOICE_FILE =
  '/usr/share/festival/voices/us/cmu_us_slt_arctic_hts/hts/cmu_us_slt_arctic_hts.htsvoice';
export const FESTIVAL_BINARY = '/usr/bin/festival';

/** How long a fresh process may take to load its voice before it counts as broken. */
const START_MS = 30_000;

/**
 * Defines `voxd_run`, which speaks one text file into one WAV file, and says `voxd:ready`. The WAV
 * is written as text2wave writes it (same header, same bytes: checked), one utterance after the
 * other. Speed is hts_engine's own rate option (`-r`), given only when it is not 1, so that at
 * speed 1 the voice speaks exactly as text2wave makes it. Markers go to stderr, which is unbuffered.
 */
const PREAMBLE = `
(voice_cmu_us_slt_arctic_hts)
(set! voxd_params hts_engine_params)
(define (voxd_save utt)
  (if (eq? voxd_count 0)
      (wave.save.header voxd_fp (utt.wave utt) "riff" nil (list (list "numsamples" 0))))
  (set! voxd_count (+ voxd_count (get_param 'num_samples (wave.info (utt.wave utt)) 0)))
  (wave.save.data.fp (utt.wave utt) voxd_fp "riff" nil)
  (set! voxd_last utt))
(set! tts_hooks (list utt.synth voxd_save))
(define (voxd_speak infile outfile rate)
  (set! hts_engine_params (if rate (append voxd_params (list (list "-r" rate))) voxd_params))
  (set! voxd_fp (fopen outfile "wb"))
  (set! voxd_count 0)
  (set! voxd_last nil)
  (tts_file infile nil)
  (if voxd_last
      (begin (fseek voxd_fp 0 0)
             (wave.save.header voxd_fp (utt.wave voxd_last) "riff" nil
                               (list (list "numsamples" voxd_count)))))
  (fclose voxd_fp)
  (format stderr "voxd:done\\n"))
(define (voxd_run infile outfile rate)
  (unwind-protect (voxd_speak infile outfile rate) (format stderr "voxd:failed\\n")))
(format stderr "voxd:ready\\n")
`;

/** A Scheme string literal of `s`: the paths are ours, but a TMPDIR with a quote must not break out. */
export function schemeString(s: string): string {
  return `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** The command that speaks `input` into `output`; `speed` 1 leaves the voice's own rate. */
export function speakCommand(input: string, output: string, speed: number): string {
  const rate = speed === 1 ? 'nil' : String(speed);
  return `(voxd_run ${schemeString(input)} ${schemeString(output)} ${rate})\n`;
}

interface Pending {
  resolve(): void;
  reject(err: Error): void;
  /** Festival's other stderr lines during this call (its SIOD errors), for the failure message. */
  said: string[];
}

/** Festival's processes alive now (their pids), so a test can check a cancelled one is gone. */
const live = new Set<ChildProcess>();
export function festivalProcessIds(): number[] {
  return [...live].flatMap((child) => (child.pid === undefined ? [] : [child.pid]));
}

/**
 * Kills every Festival process at once (SIGKILL), for a server about to exit without its normal
 * teardown: one in the middle of a long text would otherwise finish it before it saw its stdin close.
 */
export function killFestivalProcesses(): void {
  for (const child of live) child.kill('SIGKILL');
  // Their folders too: the teardown that would remove them is being skipped.
  for (const dir of liveDirs) rmSync(dir, { recursive: true, force: true });
  liveDirs.clear();
}

/** The folders of the sessions' processes, for killFestivalProcesses. */
const liveDirs = new Set<string>();

async function removeDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
  liveDirs.delete(dir);
}

class Running {
  readonly child: ChildProcess;
  pending: Pending | undefined;
  exited = false;

  constructor(private readonly dir: string) {
    this.child = spawn(FESTIVAL_BINARY, ['--pipe'], {
      stdio: ['pipe', 'ignore', 'pipe'],
      cwd: dir,
      // Festival loads ~/.festivalrc at start; a HOME of its own keeps a user's settings out, so
      // the voice speaks as installed.
      env: { ...process.env, HOME: dir },
    });
    live.add(this.child);
    // A write to a process that just died fails with EPIPE: its exit reports the loss.
    this.child.stdin!.on('error', () => {});
    // Not once: a failed kill is an 'error' too, and one nobody hears would end the server.
    this.child.on('error', (err) => this.#lost(`failed: ${err.message}`));
    this.child.once('exit', (code, signal) =>
      this.#lost(signal ? `exited on signal ${signal}` : `exited with code ${code}`),
    );
    createInterface({ input: this.child.stderr! }).on('line', (line) => this.#line(line));
  }

  /** Sends `command` and resolves at Festival's `voxd:done` (or `voxd:ready` for the preamble). */
  send(command: string): Promise<void> {
    if (this.exited) return Promise.reject(new EngineCrashed('festival is not running'));
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject, said: [] };
      this.child.stdin!.write(command);
    });
  }

  kill(): void {
    live.delete(this.child);
    if (!this.exited) this.child.kill('SIGKILL');
  }

  get inputDir(): string {
    return this.dir;
  }

  #line(line: string): void {
    const pending = this.pending;
    if (!pending) return;
    if (line === 'voxd:done' || line === 'voxd:ready') {
      this.pending = undefined;
      pending.resolve();
    } else if (line === 'voxd:failed') {
      this.pending = undefined;
      pending.reject(new Error(`festival failed: ${pending.said.join(' ') || 'no reason given'}`));
    } else if (pending.said.length < 20) pending.said.push(line.trim());
  }

  #lost(why: string): void {
    if (this.exited) return;
    this.exited = true;
    live.delete(this.child);
    const pending = this.pending;
    this.pending = undefined;
    pending?.reject(
      new EngineCrashed(`festival ${why}${pending.said.length ? `: ${pending.said.join(' ')}` : ''}`),
    );
  }
}

/** The festival process of one session: one call at a time (a session serves one request at a time). */
export class FestivalProcess {
  #running: Running | undefined;
  #busy = false;

  /**
   * Speaks `text` at `speed` and returns the WAV bytes Festival wrote (empty when it found no
   * utterance in the text). Rejects with the signal's reason as soon as it aborts, the process
   * killed; with EngineCrashed when the process dies by itself.
   */
  async speak(text: string, speed: number, signal: AbortSignal): Promise<Buffer> {
    signal.throwIfAborted();
    if (this.#busy) throw new Error('festival is already speaking for this session');
    this.#busy = true;
    let running: Running | undefined;
    const onAbort = () => running?.kill();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      running = await this.#start(signal);
      const input = join(running.inputDir, 'in.txt');
      const output = join(running.inputDir, 'out.wav');
      try {
        await writeFile(input, `${text}\n`);
        signal.throwIfAborted();
        await abortable(running.send(speakCommand(input, output, speed)), signal);
        return await readFile(output);
      } finally {
        await Promise.all([rm(input, { force: true }), rm(output, { force: true })]);
      }
    } catch (err) {
      // A killed or failed process is not reused: the next call starts a fresh one.
      if (running && (signal.aborted || running.exited)) this.#drop(running);
      throw signal.aborted ? signal.reason : err;
    } finally {
      signal.removeEventListener('abort', onAbort);
      this.#busy = false;
    }
  }

  async #start(signal: AbortSignal): Promise<Running> {
    if (this.#running && !this.#running.exited) return this.#running;
    // One lost between calls (the OOM killer): its folder goes with it.
    if (this.#running) this.#drop(this.#running);
    const dir = await mkdtemp(join(tmpdir(), 'voxd-festival-'));
    liveDirs.add(dir);
    const running = new Running(dir);
    this.#running = running;
    const timer = setTimeout(() => {
      const pending = running.pending;
      running.pending = undefined;
      pending?.reject(new Error(`festival did not load its voice within ${START_MS / 1000} s`));
      running.kill();
    }, START_MS);
    try {
      await abortable(running.send(PREAMBLE), signal);
      return running;
    } catch (err) {
      this.#drop(running);
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  #drop(running: Running): void {
    running.kill();
    if (this.#running === running) this.#running = undefined;
    void removeDir(running.inputDir).catch(() => {});
  }

  /** Ends the process and removes its folder. */
  async dispose(): Promise<void> {
    const running = this.#running;
    if (!running) return;
    this.#running = undefined;
    running.kill();
    await removeDir(running.inputDir);
  }
}

/** `promise`, or the signal's reason as soon as it aborts. */
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    // Its loss is reported by the abort: the process behind it is being killed.
    promise.catch(() => {});
    return Promise.reject(signal.reason as Error);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
