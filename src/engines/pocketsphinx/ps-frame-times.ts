/**
 * Where the frames a pocketsphinx decoder searched lie in its input. Its front end's voice detector
 * (`-remove_silence`, on by default) leaves out the frames of silence, so the decoder's frame n is
 * the n-th frame it kept, and a word after a pause would be timed early by the pause's length. A
 * second front end with the decoder's configuration, fed the same audio from the same state (a new
 * stream and utterance), keeps the same frames; fed one frame shift at a time, it tells which input
 * frames those are: a shift that yields k frames yields the k input frames ending with its own (the
 * detector's pre-speech buffer, flushed when speech starts, holds the frames just before).
 */
import { koffi, sphinxbase } from './ps-native.js';

/** More frames than one shift can yield (the pre-speech buffer, 20 frames by default, and one). */
const MOST_FRAMES = 128;

const lib = {
  init: sphinxbase.func('void *fe_init_auto_r(void *config)'),
  free: sphinxbase.func('int fe_free(void *fe)'),
  outputSize: sphinxbase.func('int fe_get_output_size(void *fe)'),
  inputSize: sphinxbase.func('void fe_get_input_size(void *fe, _Out_ int *shift, _Out_ int *size)'),
  startStream: sphinxbase.func('void fe_start_stream(void *fe)'),
  startUtt: sphinxbase.func('int fe_start_utt(void *fe)'),
  // `speech` is the `const int16 **` the front end advances past what it consumed.
  process: sphinxbase.func(
    'int fe_process_frames(void *fe, void *speech, _Inout_ size_t *nsamps, void *cep, _Inout_ int32_t *nframes, int32_t *frameidx)',
  ),
  endUtt: sphinxbase.func('int fe_end_utt(void *fe, void *cepvector, _Out_ int32_t *nframes)'),
  calloc2d: sphinxbase.func(
    'void *__ckd_calloc_2d__(size_t d1, size_t d2, size_t size, const char *file, int line)',
  ),
  free2d: sphinxbase.func('void ckd_free_2d(void *ptr)'),
};

export class FrameTimes {
  readonly #fe: unknown;
  readonly #shift: number;
  readonly #size: number;
  /** Output rows for the kept frames' cepstra, which are not used: only their count is. */
  readonly #rows: unknown;
  readonly #row: unknown;
  /** The `const int16 *` the front end reads from and advances. */
  readonly #speech = koffi.alloc('void *', 1);
  /** The input frame of each frame kept so far. */
  #kept: number[] = [];
  #samples = 0;

  /** `config`: the decoder's (ps_get_config), so that this front end is the decoder's twin. */
  constructor(config: unknown) {
    this.#fe = lib.init(config);
    if (!this.#fe) throw new Error('pocketsphinx: could not make a front end for word times');
    const shift = [0];
    const size = [0];
    lib.inputSize(this.#fe, shift, size);
    [this.#shift, this.#size] = [shift[0]!, size[0]!];
    const cepstra = lib.outputSize(this.#fe) as number;
    this.#rows = lib.calloc2d(MOST_FRAMES, cepstra, 4, 'voxd', 0);
    this.#row = koffi.alloc('float', cepstra);
  }

  /** A new utterance, from the state the decoder's front end starts it in (a new stream). */
  start(): void {
    lib.startStream(this.#fe);
    lib.startUtt(this.#fe);
    this.#kept = [];
    this.#samples = 0;
  }

  feed(pcm: Int16Array): void {
    if (pcm.length === 0) return;
    const samples = koffi.alloc('int16_t', pcm.length);
    try {
      new Int16Array(koffi.view(samples, pcm.byteLength)).set(pcm);
      koffi.encode(this.#speech, 0, 'void *', samples);
      for (let at = 0; at < pcm.length; at += this.#shift) {
        const n = Math.min(this.#shift, pcm.length - at);
        const frames = [MOST_FRAMES];
        lib.process(this.#fe, this.#speech, [n], this.#rows, frames, null);
        this.#samples += n;
        this.#keep(frames[0]!, this.#read() - 1);
      }
    } finally {
      koffi.free(samples);
    }
  }

  /** The end of the utterance: the front end makes a last frame of the samples it holds. */
  end(): void {
    const frames = [0];
    lib.endUtt(this.#fe, this.#row, frames);
    this.#keep(frames[0]!, this.#read());
  }

  /** Frames kept so far (the decoder searched as many). */
  get kept(): number {
    return this.#kept.length;
  }

  /** The input frame of the decoder's frame `frame`. */
  input(frame: number): number {
    const last = this.#kept.length - 1;
    if (last < 0) return frame;
    return frame <= last ? this.#kept[frame]! : this.#kept[last]! + frame - last;
  }

  dispose(): void {
    lib.free2d(this.#rows);
    koffi.free(this.#row);
    koffi.free(this.#speech);
    lib.free(this.#fe);
  }

  /** Input frames the front end has read from the samples fed. */
  #read(): number {
    return this.#samples < this.#size ? 0 : Math.floor((this.#samples - this.#size) / this.#shift) + 1;
  }

  #keep(count: number, last: number): void {
    for (let i = count - 1; i >= 0; i--) this.#kept.push(last - i);
  }
}
