/**
 * `pocketsphinx_asr`: English speech recognition with CMU pocketsphinx and Debian's en-us model
 * (packages libpocketsphinx3 and pocketsphinx-en-us, which voxd's set-up installs). `path` may name
 * another model folder laid out like /usr/share/pocketsphinx/model/en-us. Each session is a runner
 * process with its own decoder; sessions share the model files on disk. Results carry word times
 * from the decoder's segmentation.
 */
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { VoxdError } from '../../errors.js';
import { CpuFamily } from '../cpu-family.js';
import { inputSamples, ModelRunners, WorkerEngineSession } from '../engine-worker.js';
import type { EngineRequest, EngineResult, LoadSpec, ParamRow, RunContext } from '../types.js';
import type { PsCall as Job, PsPartial, PsReply, PsSettings } from './ps-worker.js';

const WORKER_URL = new URL('./ps-worker.js', import.meta.url);
export const DEFAULT_POCKETSPHINX_MODEL = '/usr/share/pocketsphinx/model/en-us';
const INSTALL_HINT =
  'install the Debian packages libpocketsphinx3 and pocketsphinx-en-us (npm start and npm test do this as root)';

class PocketsphinxSession extends WorkerEngineSession<Job, PsReply> {
  /** Starts the runner and loads its decoder now, so a broken model fails the load, not a request. */
  async start(signal: AbortSignal): Promise<void> {
    await this.job({ kind: 'ping' }, signal);
  }

  /**
   * A listener (a streamed response) gets text deltas as the words settle: pocketsphinx then
   * decodes in quarter-second steps, and the words on which its last three guesses agree are sent
   * on (early guesses are often revised); what is left of the final text follows at the end.
   */
  async run(request: EngineRequest, { signal, onEvent }: RunContext): Promise<EngineResult> {
    const samples = inputSamples(request, 'speech recognition');
    const words = new SettledWords((delta) => onEvent?.({ type: 'text', delta }));
    const onPartial = (event: unknown) => words.guess((event as PsPartial).hypothesis);
    const job = { kind: 'decode' as const, samples, partials: onEvent !== undefined };
    const reply = await this.job(job, signal, [], onEvent ? onPartial : undefined);
    if (onEvent) await words.final(reply.text);
    return { text: reply.text, language: 'en', words: reply.words ?? [] };
  }
  /** Live input: one utterance fed piece by piece as the client sends it, guesses streamed back. */
  async runLive(request: EngineRequest, { signal, onEvent }: RunContext): Promise<EngineResult> {
    const words = new SettledWords((delta) => onEvent?.({ type: 'text', delta }));
    const onPartial = (event: unknown) => words.guess((event as PsPartial).hypothesis);
    const call = (job: Job) => this.job(job, signal, [], onPartial);
    await call({ kind: 'begin' });
    try {
      for await (const piece of request.liveAudio ?? [])
        await call({ kind: 'feed', samples: piece.pcm16 ?? piece.samples });
    } catch (err) {
      // The client's body failed: close the utterance so the session is clean for the next request.
      if (!signal.aborted) await call({ kind: 'end' }).catch(() => undefined);
      throw err;
    }
    const { text, words: timed = [] } = await call({ kind: 'end' });
    await words.final(text);
    return { text, language: 'en', words: timed };
  }
}

/** Turns a decoder's successive guesses into text deltas that are never taken back. */
export class SettledWords {
  #sent: string[] = [];
  #recent: string[][] = [];

  /** `send`'s promise, when it gives one, is returned by the call that sent (for backpressure). */
  constructor(private readonly send: (delta: string) => unknown) {}

  /** One guess; words on which the last three guesses agree are sent. */
  guess(hypothesis: string): unknown {
    this.#recent = [...this.#recent.slice(-2), hypothesis.split(' ').filter(Boolean)];
    if (this.#recent.length < 3) return;
    const [a, b, c] = this.#recent as [string[], string[], string[]];
    let agreed = 0;
    while (agreed < a.length && a[agreed] === b[agreed] && a[agreed] === c[agreed]) agreed++;
    return this.#extend(a.slice(0, agreed));
  }

  /** The final text: the rest of it, if it still extends what was sent. */
  final(text: string): unknown {
    return this.#extend(text.split(' ').filter(Boolean));
  }

  #extend(words: string[]): unknown {
    if (words.length <= this.#sent.length || this.#sent.some((w, i) => words[i] !== w)) return;
    const added = words.slice(this.#sent.length);
    const sent = this.send(`${this.#sent.length > 0 ? ' ' : ''}${added.join(' ')}`);
    this.#sent = words;
    return sent;
  }
}

export class PocketsphinxFamily extends CpuFamily {
  readonly name = 'pocketsphinx_asr';
  readonly tasks = ['asr'] as const;
  readonly liveInput = true;
  readonly params: readonly ParamRow[] = [];

  async estimateFootprint(): Promise<number> {
    return 120 * 1024 * 1024;
  }

  async load(spec: LoadSpec, signal: AbortSignal) {
    const dir = spec.path || DEFAULT_POCKETSPHINX_MODEL;
    const settings: PsSettings = {
      hmm: join(dir, 'en-us'),
      lm: join(dir, 'en-us.lm.bin'),
      dict: join(dir, 'cmudict-en-us.dict'),
    };
    for (const file of Object.values(settings)) {
      try {
        await access(file);
      } catch {
        throw new VoxdError(
          'E_INVALID_REQUEST',
          `model '${spec.modelId}': pocketsphinx model file not found: ${file}; ${INSTALL_HINT}`,
        );
      }
    }
    const runners = new ModelRunners<Job, PsReply>('session', WORKER_URL, settings);
    return this.loaded(spec, async (id) => {
      const session = new PocketsphinxSession(id, runners.forSession());
      try {
        await session.start(signal);
      } catch (err) {
        await session.dispose();
        throw err;
      }
      return session;
    });
  }
}
