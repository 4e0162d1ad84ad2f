/**
 * `pocketsphinx_asr`: English speech recognition with CMU pocketsphinx and Debian's en-us model
 * (packages libpocketsphinx3 and pocketsphinx-en-us, which voxd's set-up installs). `path` may name
 * another model folder laid out like /usr/share/pocketsphinx/model/en-us. Each session is a runner
 * process with its own decoder; sessions share the model files on disk. Results carry word times
 * from the decoder's segmentation.
 */
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { heldSamples } from '../../audio/types.js';
import { VoxdError } from '../../errors.js';
import { CpuFamily } from '../cpu-family.js';
import { inputSamples, ModelRunners, WorkerEngineSession } from '../engine-worker.js';
import type { EngineRequest, EngineResult, LoadSpec, ParamRow, RunContext } from '../types.js';
import type { PsCall as Job, PsPartial, PsReply, PsSettings } from './ps-worker.js';
import { SettledWords, splitWords } from './settled-words.js';

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
   * A recording is searched whole (the most accurate search). A listener (a streamed answer) then
   * gets its words as deltas: a step-by-step search would send words sooner, but its final text
   * differs from the whole search's, and a streamed answer must say what the plain one says.
   */
  async run(request: EngineRequest, { signal, onEvent }: RunContext): Promise<EngineResult> {
    const samples = inputSamples(request, 'speech recognition');
    const reply = await this.job({ kind: 'decode', samples }, signal);
    const said = splitWords(reply.text);
    if (onEvent)
      for (const [i, word] of said.entries())
        await onEvent({ type: 'text', delta: i > 0 ? ` ${word}` : word });
    return { text: said.join(' '), language: 'en', words: reply.words ?? [] };
  }
  /**
   * Live input: one utterance fed piece by piece as the client sends it. Words the decoder's
   * guesses settle on are sent as they settle; the text at the end starts with exactly those
   * (settled-words.ts), and so do its timed words.
   */
  async runLive(request: EngineRequest, { signal, onEvent }: RunContext): Promise<EngineResult> {
    const settled = new SettledWords((delta) => onEvent?.({ type: 'text', delta }));
    const onPartial = (event: unknown) => settled.guess((event as PsPartial).hypothesis);
    const call = (job: Job) => this.job(job, signal, [], onPartial);
    await call({ kind: 'begin' });
    try {
      for await (const piece of request.liveAudio ?? [])
        await call({ kind: 'feed', samples: heldSamples(piece) });
    } catch (err) {
      // The client's body failed: close the utterance so the session is clean for the next request.
      if (!signal.aborted) await call({ kind: 'end' }).catch(() => undefined);
      throw err;
    }
    const reply = await call({ kind: 'end' });
    return { ...(await settled.final(reply.text, reply.words)), language: 'en' };
  }
}

export class PocketsphinxFamily extends CpuFamily {
  readonly name = 'pocketsphinx_asr';
  readonly tasks = ['asr'] as const;
  readonly liveInput = true;
  readonly params: readonly ParamRow[] = [];

  /** A decoder of about 105 MB, and its second search for live input (PsDecoder) of about 65 MB. */
  async estimateFootprint(): Promise<number> {
    return 185 * 1024 * 1024;
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
