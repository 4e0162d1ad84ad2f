/**
 * The engine of one pocketsphinx session, in its runner process: its own decoder (about 110 MB)
 * over the shared model files, driven through koffi. The library calls are synchronous, which is
 * fine off the server's event loop.
 */
import { createRequire } from 'node:module';
import { engineData, serveJobs } from '../engine-port.js';
import type { JobFailure } from '../job-error.js';

export interface PsSettings {
  hmm: string;
  lm: string;
  dict: string;
}

export type PsJob =
  | { id: number; kind: 'ping' }
  /** `partials`: decode in steps, emitting `{ hypothesis }` whenever the best guess changes. */
  | { id: number; kind: 'decode'; pcm: Int16Array; partials?: boolean }
  /** Live input: open an utterance, feed it pieces as they arrive (emitting guesses), end it. */
  | { id: number; kind: 'begin' }
  | { id: number; kind: 'feed'; pcm: Int16Array }
  | { id: number; kind: 'end' };

/** An event of a decode with partials: the best hypothesis so far. */
export interface PsPartial {
  hypothesis: string;
}
export type PsReply = { id: number; ok: true; text: string } | JobFailure;

type Fn = (...args: unknown[]) => unknown;
interface Koffi {
  load(path: string): { func(signature: string): Fn };
}

const settings = engineData<PsSettings>();
const koffi = createRequire(import.meta.url)('koffi') as Koffi;
const ps = koffi.load('libpocketsphinx.so.3');
const sphinxbase = koffi.load('libsphinxbase.so.3');
// The library logs every step to stderr unless told otherwise.
sphinxbase.func('int err_set_logfile(const char *path)')('/dev/null');
const argv = ['-hmm', settings.hmm, '-lm', settings.lm, '-dict', settings.dict];
const config = sphinxbase.func(
  'void *cmd_ln_parse_r(void *inout, void *defn, int argc, const char **argv, int strict)',
)(null, ps.func('void *ps_args()')(), argv.length, argv, 1);
if (!config) throw new Error('pocketsphinx rejected its model configuration');
const decoder = ps.func('void *ps_init(void *config)')(config);
if (!decoder) throw new Error(`pocketsphinx could not load the model in ${settings.hmm}`);
const startUtt = ps.func('int ps_start_utt(void *ps)');
const processRaw = ps.func(
  'int ps_process_raw(void *ps, const int16_t *data, size_t n, int no_search, int full_utt)',
);
const endUtt = ps.func('int ps_end_utt(void *ps)');
const getHyp = ps.func('const char *ps_get_hyp(void *ps, _Out_ int *score)');

/** A quarter second at 16 kHz: how much audio a decode with partials takes between guesses. */
const STEP = 4000;

const hypothesis = () => ((getHyp(decoder, [0]) as string | null) ?? '').trim();

let open = false;
let lastGuess = '';

function begin(): void {
  if (open) endUtt(decoder);
  if ((startUtt(decoder) as number) < 0) throw new Error('pocketsphinx could not start an utterance');
  open = true;
  lastGuess = '';
}

/**
 * Audio in quarter-second steps, emitting the best guess whenever it changes; each step waits for
 * room in the job's event window (a streamed answer whose client reads slowly pauses the decode).
 */
async function feed(pcm: Int16Array, emit: (partial: PsPartial) => Promise<void>): Promise<void> {
  if (!open) throw new Error('pocketsphinx: audio fed outside an utterance');
  for (let at = 0; at < pcm.length; at += STEP) {
    const step = pcm.subarray(at, at + STEP);
    processRaw(decoder, step, step.length, 0, 0);
    const now = hypothesis();
    if (now !== lastGuess) {
      lastGuess = now;
      await emit({ hypothesis: now });
    }
  }
}

function end(): string {
  if (!open) return '';
  open = false;
  endUtt(decoder);
  return hypothesis();
}

async function decode(pcm: Int16Array, emit?: (partial: PsPartial) => Promise<void>): Promise<string> {
  if (pcm.length === 0) return '';
  begin();
  // Without a listener, the whole utterance at once: the most accurate search (the offline answer).
  if (emit) await feed(pcm, emit);
  else processRaw(decoder, pcm, pcm.length, 0, 1);
  return end();
}

serveJobs(async (job: PsJob, emit) => {
  switch (job.kind) {
    case 'ping':
      return { text: '' };
    case 'decode':
      return { text: await decode(job.pcm, job.partials ? emit : undefined) };
    case 'begin':
      begin();
      return { text: '' };
    case 'feed':
      await feed(job.pcm, emit);
      return { text: '' };
    case 'end':
      return { text: end() };
  }
});
