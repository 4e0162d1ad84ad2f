/**
 * One pocketsphinx decoder (Debian's libpocketsphinx3 0.8+5prealpha) through koffi: the calls voxd
 * makes on it, its word segmentation timed in its input, and the state of its feature front end
 * that outlives an utterance (so that each utterance can start from the state a fresh decoder has). The library calls
 * are synchronous; the engine's runner keeps them off the server's event loop. The benchmark
 * (scripts/bench-pocketsphinx-cmn.mjs) drives the same object.
 */
import { FrameTimes } from './ps-frame-times.js';
import { koffi, pocketsphinx as ps, sphinxbase } from './ps-native.js';

/** The model files of one decoder (an acoustic model folder, a language model, a dictionary). */
export interface PsModelFiles {
  hmm: string;
  lm: string;
  dict: string;
}

/** One recognised word (fillers included) of the best hypothesis, in 10 ms frames. */
export interface PsSegment {
  word: string;
  /** First and last frame of the word (both inclusive), counted from the utterance's first sample. */
  startFrame: number;
  endFrame: number;
  /** Posterior probability from the word lattice, 0..1. */
  posterior: number;
}

/**
 * The cepstral mean normaliser's running state (sphinxbase's cmn_t): the mean it subtracts, the sum
 * and count of frames it is learning the next mean from. In live normalisation this is what one
 * utterance hands the next; batch normalisation recomputes the mean from each utterance alone.
 */
export interface CmnState {
  mean: number[];
  sum: number[];
  frames: number;
}

/** sphinxbase's cmn_type_t. */
export const CMN_NONE = 0;
export const CMN_BATCH = 1;
export const CMN_LIVE = 2;

/** pocketsphinx computes one feature frame every 10 ms: 160 samples at 16 kHz. */
export const FRAME_SAMPLES = 160;

/**
 * sphinxbase's live normalisation window (cmn.h): once it has counted more than CMN_WIN_HWM frames
 * it renews the mean from them and keeps their sum as CMN_WIN frames' worth.
 */
const CMN_WIN = 500;
const CMN_WIN_HWM = 800;
/**
 * Frames a part of `samples` can add to the normalisation's count before the next part: its own
 * (a 4000-sample step added 25, measured on a fresh decoder and after a 31 s offline decode), the
 * one the front end makes of held-over samples at the utterance's end, and room to spare.
 */
const partFrames = (samples: number) => Math.ceil(samples / FRAME_SAMPLES) + 5;

// The float type of mfcc_t: Debian builds sphinxbase without FIXED_POINT (sphinx_config.h).
const MFCC = 'float';
/** The leading fields of sphinxbase's feat_t (feat.h), as far as `cmn_struct`. */
const FEAT = koffi.struct('voxd_ps_feat_t', {
  refcount: 'int',
  name: 'void *',
  cepsize: 'int32_t',
  n_stream: 'int32_t',
  stream_len: 'void *',
  window_size: 'int32_t',
  n_sv: 'int32_t',
  sv_len: 'void *',
  subvecs: 'void *',
  sv_buf: 'void *',
  sv_dim: 'int32_t',
  cmn: 'int',
  varnorm: 'int32_t',
  agc: 'int',
  compute_feat: 'void *',
  cmn_struct: 'void *',
});
/** sphinxbase's cmn_t (cmn.h). */
const CMN = koffi.struct('voxd_ps_cmn_t', {
  cmn_mean: 'void *',
  cmn_var: 'void *',
  sum: 'void *',
  nframe: 'int32_t',
  veclen: 'int32_t',
});
/** The leading fields of pocketsphinx's ps_decoder_t (pocketsphinx_internal.h), as far as `acmod`. */
const DECODER = koffi.struct('voxd_ps_decoder_t', {
  config: 'void *',
  refcount: 'int',
  acmod: 'void *',
});
const CMN_TYPE_AT = koffi.offsetof(FEAT, 'cmn');
const NFRAME_AT = koffi.offsetof(CMN, 'nframe');

const lib = {
  args: ps.func('void *ps_args()'),
  parse: sphinxbase.func(
    'void *cmd_ln_parse_r(void *inout, void *defn, int argc, const char **argv, int strict)',
  ),
  init: ps.func('void *ps_init(void *config)'),
  free: ps.func('int ps_free(void *ps)'),
  startStream: ps.func('int ps_start_stream(void *ps)'),
  startUtt: ps.func('int ps_start_utt(void *ps)'),
  processRaw: ps.func(
    'int ps_process_raw(void *ps, const int16_t *data, size_t n, int no_search, int full_utt)',
  ),
  endUtt: ps.func('int ps_end_utt(void *ps)'),
  getHyp: ps.func('const char *ps_get_hyp(void *ps, _Out_ int *score)'),
  getFeat: ps.func('void *ps_get_feat(void *ps)'),
  getLogmath: ps.func('void *ps_get_logmath(void *ps)'),
  getConfig: ps.func('void *ps_get_config(void *ps)'),
  nFrames: ps.func('int ps_get_n_frames(void *ps)'),
  logmathExp: sphinxbase.func('double logmath_exp(void *lmath, int p)'),
  segIter: ps.func('void *ps_seg_iter(void *ps)'),
  segNext: ps.func('void *ps_seg_next(void *seg)'),
  segWord: ps.func('const char *ps_seg_word(void *seg)'),
  segFrames: ps.func('void ps_seg_frames(void *seg, _Out_ int *sf, _Out_ int *ef)'),
  segProb: ps.func(
    'int32_t ps_seg_prob(void *seg, _Out_ int32_t *ascr, _Out_ int32_t *lscr, _Out_ int32_t *lback)',
  ),
  cmnLiveSet: sphinxbase.func('void cmn_live_set(void *cmn, const float *vec)'),
  streamOffset: ps.func('int32_t acmod_stream_offset(void *acmod)'),
  getSearch: ps.func('const char *ps_get_search(void *ps)'),
  setSearch: ps.func('int ps_set_search(void *ps, const char *name)'),
  setLmFile: ps.func('int ps_set_lm_file(void *ps, const char *name, const char *path)'),
  setInt: sphinxbase.func('void cmd_ln_set_int_r(void *cmdln, const char *name, long iv)'),
};

/** The name of the search live utterances use (`PsDecoder.startFresh(true)`). */
const LIVE_SEARCH = 'voxd-live';

interface CmnFields {
  cmn_mean: unknown;
  sum: unknown;
  nframe: number;
  veclen: number;
}

export class PsDecoder {
  readonly #ps: unknown;
  readonly #feat: unknown;
  readonly #cmn: unknown;
  readonly #logmath: unknown;
  readonly #acmod: unknown;
  readonly #initialType: number;
  readonly #initialCmn: CmnState;
  readonly #times: FrameTimes;
  /** The search whole utterances use (the decoder's own, with its flat-lexicon pass). */
  readonly #wholeSearch: string;
  /** Whether the open utterance's frames are being mapped to its input (after startFresh). */
  #timed = false;

  /** `options`: more pocketsphinx options, as on its command line (voxd gives none). */
  constructor(files: PsModelFiles, options: readonly string[] = []) {
    const argv = ['-hmm', files.hmm, '-lm', files.lm, '-dict', files.dict, ...options];
    const config = lib.parse(null, lib.args(), argv.length, argv, 1);
    if (!config) throw new Error(`pocketsphinx rejected its configuration: ${argv.join(' ')}`);
    this.#ps = lib.init(config);
    if (!this.#ps) throw new Error(`pocketsphinx could not load the model in ${files.hmm}`);
    this.#feat = lib.getFeat(this.#ps);
    this.#cmn = (koffi.decode(this.#feat, FEAT) as { cmn_struct: unknown }).cmn_struct;
    this.#logmath = lib.getLogmath(this.#ps);
    this.#acmod = (koffi.decode(this.#ps, DECODER) as { acmod: unknown }).acmod;
    this.#initialType = this.cmnType;
    this.#initialCmn = this.cmnState();
    this.#times = new FrameTimes(lib.getConfig(this.#ps));
    this.#wholeSearch = lib.getSearch(this.#ps) as string;
    this.#addLiveSearch(files.lm);
  }

  /**
   * A second search over the language model, without pocketsphinx's flat-lexicon pass (`-fwdflat`,
   * read from the configuration when a search is made): that pass searches the whole utterance
   * again when it ends, which is what a realtime commit waits for, and live words are as good
   * without it (docs/performance.md, "Realtime manual commit"). Whole utterances keep it.
   */
  #addLiveSearch(lm: string): void {
    const config = lib.getConfig(this.#ps);
    lib.setInt(config, '-fwdflat', 0);
    try {
      if ((lib.setLmFile(this.#ps, LIVE_SEARCH, lm) as number) < 0)
        throw new Error(`pocketsphinx could not load the language model ${lm} for live input`);
    } finally {
      lib.setInt(config, '-fwdflat', 1);
    }
    if ((lib.setSearch(this.#ps, this.#wholeSearch) as number) < 0)
      throw new Error('pocketsphinx could not return to its own search');
  }

  /**
   * Starts an utterance from the state a fresh decoder starts its first one in, whatever this one
   * heard before (the alternatives measured in docs/performance.md): a new stream, so the front
   * end's noise estimate starts over; the model's own normalisation (batch, per utterance, with
   * Debian's en-us model), which sphinxbase's feat_cmn turns into live normalisation for good once
   * it is fed part of an utterance; and the live normaliser's initial state (the model's initial
   * mean, `-cmninit`, with no frames counted yet), for a decode in parts. Giving that mean the
   * weight of 500 frames (cmn_live_set) heard 2 of 71 LibriVox words better streamed, but its
   * guesses settled on a word the final pass then changed; docs/performance.md has the figures.
   */
  startFresh(live = false): void {
    if ((lib.setSearch(this.#ps, live ? LIVE_SEARCH : this.#wholeSearch) as number) < 0)
      throw new Error('pocketsphinx could not choose its search');
    this.startStream();
    this.cmnType = this.#initialType;
    this.setCmnState(this.#initialCmn);
    this.startUtt();
    this.#times.start();
    this.#timed = true;
  }

  /** A whole utterance at once, after startFresh (batch normalisation uses all of it). */
  decodeWhole(pcm: Int16Array): void {
    this.#times.feed(pcm);
    this.processRaw(pcm, true);
  }

  /**
   * A part of an utterance (a streamed or live decode), after startFresh. sphinxbase renews the
   * live mean at the end of whichever block of frames crosses CMN_WIN_HWM, and its blocks follow the
   * decoder's frame buffer, which grows with the longest whole utterance decoded so far: after a
   * long offline request the same audio would be normalised differently. The mean is renewed here
   * instead, before a part that could cross the count, so that only the parts decide where.
   */
  feedPart(pcm: Int16Array): void {
    const state = this.cmnState();
    if (state.frames + partFrames(pcm.length) > CMN_WIN_HWM) {
      const keep = CMN_WIN / state.frames;
      this.setCmnState({
        mean: state.sum.map((x) => x / state.frames),
        sum: state.sum.map((x) => x * keep),
        frames: CMN_WIN,
      });
    }
    this.#times.feed(pcm);
    this.processRaw(pcm, false);
  }

  /** Starts a new stream: the front end's noise estimate and frame count start over. */
  startStream(): void {
    lib.startStream(this.#ps);
  }

  /** A new utterance as the decoder would start it itself (its state left as it is). */
  startUtt(): void {
    this.#timed = false;
    if ((lib.startUtt(this.#ps) as number) < 0) throw new Error('pocketsphinx could not start an utterance');
  }

  /** `fullUtt`: `pcm` is the whole utterance (batch normalisation may then use all of it). */
  processRaw(pcm: Int16Array, fullUtt: boolean): void {
    lib.processRaw(this.#ps, pcm, pcm.length, 0, fullUtt ? 1 : 0);
  }

  endUtt(): void {
    lib.endUtt(this.#ps);
    if (this.#timed) this.#times.end();
  }

  /** Frames the decoder searched in the last utterance, and as many the word-time map kept. */
  frameCounts(): { searched: number; mapped: number } {
    // ps_get_n_frames answers acmod->output_frame + 1: one more than the frames searched.
    return { searched: (lib.nFrames(this.#ps) as number) - 1, mapped: this.#times.kept };
  }

  hypothesis(): string {
    return ((lib.getHyp(this.#ps, [0]) as string | null) ?? '').trim();
  }

  /**
   * The best hypothesis word by word, fillers included, in the order spoken; after startFresh, its
   * frames are those of the input (see ps-frame-times.ts), else the decoder's own.
   */
  segments(): PsSegment[] {
    const out: PsSegment[] = [];
    const start = [0];
    const end = [0];
    // ps_seg_frames adds the "stream offset", which a decode in parts sets, when its frame buffer
    // wraps, to a frame count that runs on from earlier utterances; the search's own frames are wanted.
    const offset = lib.streamOffset(this.#acmod) as number;
    const frame = (f: number) => (this.#timed ? this.#times.input(f - offset) : f - offset);
    for (let seg = lib.segIter(this.#ps); seg; seg = lib.segNext(seg)) {
      lib.segFrames(seg, start, end);
      const logPosterior = lib.segProb(seg, [0], [0], [0]) as number;
      out.push({
        word: lib.segWord(seg) as string,
        startFrame: frame(start[0]!),
        endFrame: frame(end[0]!),
        posterior: Math.min(1, lib.logmathExp(this.#logmath, logPosterior) as number),
      });
    }
    return out;
  }

  /** How the feature front end normalises the next utterance (CMN_BATCH, CMN_LIVE or CMN_NONE). */
  get cmnType(): number {
    return koffi.decode(this.#feat, CMN_TYPE_AT, 'int') as number;
  }

  set cmnType(type: number) {
    koffi.encode(this.#feat, CMN_TYPE_AT, 'int', type);
  }

  cmnState(): CmnState {
    const cmn = koffi.decode(this.#cmn, CMN) as CmnFields;
    return {
      mean: koffi.decode(cmn.cmn_mean, MFCC, cmn.veclen) as number[],
      sum: koffi.decode(cmn.sum, MFCC, cmn.veclen) as number[],
      frames: cmn.nframe,
    };
  }

  setCmnState(state: CmnState): void {
    const cmn = koffi.decode(this.#cmn, CMN) as CmnFields;
    koffi.encode(cmn.cmn_mean, 0, MFCC, state.mean, cmn.veclen);
    koffi.encode(cmn.sum, 0, MFCC, state.sum, cmn.veclen);
    koffi.encode(this.#cmn, NFRAME_AT, 'int32_t', state.frames);
  }

  /** sphinxbase's cmn_live_set: `mean` as the live mean, weighted as 500 frames (5 s) of history. */
  cmnLiveSet(mean: readonly number[]): void {
    lib.cmnLiveSet(this.#cmn, Float32Array.from(mean));
  }

  dispose(): void {
    this.#times.dispose();
    lib.free(this.#ps);
  }
}
