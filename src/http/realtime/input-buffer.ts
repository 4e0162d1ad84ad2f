/**
 * A realtime session's input audio buffer: appends decoded into one timeline of mono samples (at
 * the model's rate, or the client's when lower: arriving-samples.ts), the client's commits and
 * clears, and under server VAD the speech detector that finds turns in it (speech_started,
 * speech_stopped, timeout_triggered) and feeds a live turn as its speech is examined. Without
 * server VAD, a streaming engine (pocketsphinx) hears the buffer as it is appended, in a live turn
 * opened at the first append, so a commit waits only for what was appended since the engine's last
 * step, not for a search of the whole buffer. Turns go to the turn-taker.
 *
 * Bounds: a turn holds at most BUFFER_SECONDS; everything held counts against the server's byte
 * budget (held-audio.ts), refused at the append that would pass it; under server VAD the audio not
 * yet examined stays under UNEXAMINED_SECONDS: an append waits (the session stops reading its
 * socket behind it) until the detector has caught up, as a Wyoming VAD exchange does.
 *
 * Positions on the timeline, and the event times made from them, count samples at the kept rate.
 */
import { registeredEntry } from '../../api/model-lookup.js';
import { vadProbe } from '../../api/vad/probe.js';
import { SampleBuffer } from '../../api/vad/sample-buffer.js';
import { PROBE_STEP_MS, SpeechDetector } from '../../api/vad/speech-detector.js';
import { requireVadModel } from '../../api/vad/vad-model.js';
import { decodePaddedBase64, isPaddedBase64Of } from '../../audio/base64.js';
import type { Audio } from '../../audio/types.js';
import type { ServerConfig } from '../../config/types.js';
import { showValue, VoxdError } from '../../errors.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { SessionShell } from '../../session/session-shell.js';
import type { LiftedLiteral } from '../../util/json-reader.js';
import { ArrivingSamples } from './arriving-samples.js';
import { bytesPerSample } from './audio-format.js';
import { type ErrorBody, errorBody, type ServerEvent, type SessionSettings } from './events.js';
import type { HeldAudio, HeldRange } from './held-audio.js';
import { LiveFeed } from './live-feed.js';
import type { ServerVad } from './turn-detection.js';
import type { Turn, TurnTaker } from './turns.js';

/**
 * The longest turn a session buffers, whatever max_audio_seconds allows (3 hours by default): its
 * samples are held until the commit, and 256 sessions of 3 hours would be terabytes. Two minutes
 * kept at 16 kHz are 7.7 MB; a client dictating longer commits as it goes.
 */
export const BUFFER_SECONDS = 120;

/**
 * Under server VAD, audio appended and not yet examined by the detector before an append waits for
 * it: the detector examines at most 5 s a probe, one probe at a time, so a client sending faster
 * than that is slowed to its pace instead of piling audio up (60 appends of 110 s held 683 MB).
 */
export const UNEXAMINED_SECONDS = 10;

/** Audio a live turn's engine is handed at a time as it arrives under server VAD (#feedSurely). */
const EAGER_FEED_MS = 100;

/** The input rate of every engine voxd has, assumed for a model not loaded yet. */
const MODEL_RATE = 16_000;

export interface InputContext {
  runtime: Runtime;
  config: ServerConfig;
  shell: SessionShell;
  settings: SessionSettings;
  turns: TurnTaker;
  held: HeldAudio;
  send(event: ServerEvent): void;
  sendError(error: ErrorBody): void;
}

/**
 * A turn whose audio goes on (server VAD's speech, or a manual buffer a streaming engine hears as it
 * is appended): where its audio starts and how far a live turn was fed.
 */
interface OpenTurn {
  turn: Turn;
  start: number;
  sentTo: number;
}

export class InputBuffer {
  readonly #ctx: InputContext;
  readonly #buffer = new SampleBuffer();
  /** The session's audio on the byte budget: the buffer, and the turns that hold some of it. */
  readonly #held: HeldAudio;
  /** The odd byte of a pcm16 append, waiting for its pair in the next one. */
  #carry: number | undefined;
  #detector: SpeechDetector | undefined;
  #open: OpenTurn | undefined;
  /**
   * Where the last turn's audio ended: a turn never starts before it, prefix padding or not, so no
   * two turns share audio (OpenAI clears the buffer at a commit; with LiveKit's defaults, 600 ms of
   * padding reached back into the previous turn's silence window and its last words were heard twice).
   */
  #committedTo = 0;
  /** Appends on their way into the buffer, at the rate the buffer keeps. */
  #arriving: ArrivingSamples;

  constructor(ctx: InputContext) {
    this.#ctx = ctx;
    this.#arriving = this.#arrivingFor();
    const buffer = this.#buffer;
    this.#held = ctx.held;
    this.#held.hold({
      get from() {
        return buffer.start;
      },
      get to() {
        return buffer.end;
      },
    });
  }

  /** Whether audio in the current format waits (a format change is refused then). */
  get holdsAudio(): boolean {
    // Under server VAD the buffer holds only the detector's context until speech starts.
    return (
      this.#open !== undefined ||
      (!this.#ctx.settings.vad && (this.#buffer.length > 0 || this.#carry !== undefined))
    );
  }

  /**
   * Turns server VAD on (afresh, from the audio that comes next) or off; speech going on is
   * committed, a manual buffer not committed is dropped (its live turn with it).
   */
  detect(vad: ServerVad | undefined): void {
    if (this.#open && this.#detector) this.#commitOpen();
    else this.#dropOpen('the session changed its turn detection before the buffer was committed');
    this.#detector?.stop();
    this.#detector = undefined;
    this.#buffer.clear();
    this.#carry = undefined;
    this.#arriving = this.#arrivingFor();
    this.#held.settle();
    if (!vad) return;
    const { runtime, config, shell } = this.#ctx;
    const rate = this.#rate;
    this.#detector = new SpeechDetector(
      this.#buffer,
      rate,
      vad,
      vadProbe(runtime, requireVadModel(runtime, config, 'turn_detection'), rate, shell.signal),
      {
        started: (position) => this.#speechStarted(position),
        examined: (to) => this.#feedOpen(to),
        stopped: (position, to) => this.#speechStopped(position, to),
        idle: (from, to) => this.#idleTimeout(from, to),
        failed: (err) => {
          const error = errorBody(err);
          this.#ctx.sendError({ ...error, message: `server VAD: ${error.message}` });
        },
      },
      // A turn is cut before the buffer's limit would refuse its audio.
      this.#limitSeconds() * 0.9,
    );
  }

  /**
   * `audio`: the event's base64, a long one's bytes as the event held them (decoded in slices), or
   * raw bytes (a Deepgram socket's binary frame).
   */
  async append(audio: string | LiftedLiteral | Uint8Array): Promise<void> {
    const decoded = await decodeAppended(audio);
    // Server VAD commits turns itself, never refused: audio faster than the model transcribes
    // waits here (the socket is not read meanwhile) until a waiting turn has started.
    if (this.#detector) await this.#ctx.turns.room();
    if (this.#ctx.shell.ended) return;
    const { encoding } = this.#ctx.settings.format;
    const width = bytesPerSample(encoding);
    const bytes = this.#carry === undefined ? decoded : Buffer.concat([Buffer.of(this.#carry), decoded]);
    const whole = bytes.length - (bytes.length % width);
    const frames = this.#arriving.framesFor(whole / width);
    const limit = this.#limitSeconds();
    const detector = this.#detector;
    if (detector) await this.#catchUp(detector, frames, limit);
    if (this.#ctx.shell.ended) return;
    if ((this.#turnFrames() + frames) / this.#rate > limit)
      throw new VoxdError(
        'E_AUDIO_TOO_LONG',
        `input_audio_buffer: the buffer would hold more than ${limit} s of audio (${limit === this.#ctx.config.max_audio_seconds ? 'max_audio_seconds' : "a realtime turn's limit"}); commit or clear it`,
        { param: 'audio' },
      );
    // A refusal (this one, or the limit's above) leaves the buffer and the odd byte as they were.
    this.#held.admit(frames);
    this.#carry = whole < bytes.length ? bytes[whole] : undefined;
    const pieces = await this.#arriving.push(bytes.subarray(0, whole), encoding);
    if (this.#ctx.shell.ended || !pieces.some((piece) => piece.length > 0)) return;
    for (const piece of pieces) this.#buffer.append(piece);
    if (!detector) {
      this.#hearAppended();
      return;
    }
    detector.update();
    this.#feedSurely(detector);
    this.#dropExamined(detector);
  }

  /**
   * Waits while more than UNEXAMINED_SECONDS wait for the detector, or more than leave room for
   * `incoming` frames under the buffer's limit, one probe after another (down to one probe's step,
   * what the detector waits for before it probes); an E_BUSY refusal when a probe makes no progress
   * (the VAD model fails or is busy: its error was told), so a detector that cannot keep up never
   * lets the audio pile up behind it.
   */
  async #catchUp(detector: SpeechDetector, incoming: number, limitSeconds: number): Promise<void> {
    const rate = this.#rate;
    const room = Math.min(rate * UNEXAMINED_SECONDS, rate * limitSeconds - incoming);
    const most = Math.max(Math.round((PROBE_STEP_MS * rate) / 1000), room);
    while (detector.unexamined > most && !this.#ctx.shell.ended) {
      const before = detector.unexamined;
      detector.update();
      await detector.settled();
      this.#dropExamined(detector);
      if (detector.unexamined >= before && !this.#ctx.shell.ended)
        throw new VoxdError(
          'E_BUSY',
          `input_audio_buffer: server VAD has more than ${UNEXAMINED_SECONDS} s of audio to examine and its model does not answer; this append was dropped, send it again`,
          { param: 'audio', retryAfterS: 1 },
        );
    }
  }

  /**
   * A live turn's engine hears what surely belongs to the turn as it arrives, not a probe later
   * (in EAGER_FEED_MS pieces: its decoder steps a quarter second at a time): when the silence that
   * ends the turn has passed, the engine has heard it and only has to finish (docs/performance.md,
   * "/v1/listen end of speech to speech_final").
   */
  #feedSurely(detector: SpeechDetector): void {
    const surely = detector.turnSurelyTo;
    const open = this.#open;
    if (surely === undefined || !open) return;
    const to = Math.min(this.#buffer.end, surely);
    if (to - open.sentTo >= (EAGER_FEED_MS * this.#rate) / 1000) this.#feedOpen(to);
  }

  /** Drops what neither the detector, a prefix padding, nor a turn going on needs any more. */
  #dropExamined(detector: SpeechDetector): void {
    const open = this.#open;
    let keep = detector.oldestNeeded;
    if (open) keep = open.turn.audio instanceof LiveFeed ? Math.min(keep, open.sentTo) : open.start;
    this.#buffer.dropBefore(keep);
    this.#held.settle();
  }

  commit(): void {
    if (this.#open && !this.#detector) {
      // The commit ends the stream: the resampler's last samples belong to this turn.
      this.#buffer.append(this.#arriving.flush());
      this.#commitOpen();
      this.#buffer.clear();
      this.#carry = undefined;
      this.#held.settle();
      return;
    }
    if (this.#open) {
      this.#commitOpen();
      return;
    }
    if (this.#buffer.length === 0) {
      this.#ctx.sendError({
        type: 'invalid_request_error',
        code: 'input_audio_buffer_commit_empty',
        message: 'input_audio_buffer: the buffer is empty; append audio before committing',
        param: null,
      });
      return;
    }
    const { turns } = this.#ctx;
    // Refused, the buffer keeps its audio for a commit once a transcript has come.
    if (turns.full) throw turns.refusal();
    // The commit ends the stream: the resampler's last samples belong to this turn.
    this.#buffer.append(this.#arriving.flush());
    const range = { from: this.#buffer.start, to: this.#buffer.end };
    const turn = this.#wholeTurn(this.#buffer.slice(range.from), range);
    this.#buffer.clear();
    this.#carry = undefined;
    this.#detector?.reset();
    turns.committed(turn);
    turns.schedule(turn);
    this.#held.settle();
  }

  clear(): void {
    this.#dropOpen('the client cleared the buffer while the turn was spoken');
    this.#buffer.clear();
    this.#carry = undefined;
    this.#arriving.reset();
    this.#detector?.reset();
    this.#held.settle();
  }

  /**
   * A shutdown: speech going on is committed as it is, to be transcribed before the close; a manual
   * buffer the client did not commit is not (nobody asked for its transcript).
   */
  commitSpeech(): void {
    const detector = this.#detector;
    detector?.stop();
    if (detector && this.#open) this.#commitOpen();
    else this.#dropOpen('the server shut down before the buffer was committed');
  }

  /**
   * Ends the speech going on now as if its silence had come (Deepgram's Finalize): committed with
   * every sample appended so far; detection goes on with what comes next. False when no speech was
   * going on.
   */
  endSpeech(): boolean {
    const detector = this.#detector;
    if (!detector || !this.#open) return false;
    this.#commitOpen();
    detector.reset();
    this.#held.settle();
    return true;
  }

  /**
   * The client's stream ended (Deepgram's CloseStream): the detector examines the audio still
   * waiting, and speech going on at its end is committed with it. Detection stops for good.
   */
  async finish(): Promise<void> {
    const detector = this.#detector;
    if (!detector) return;
    this.#buffer.append(this.#arriving.flush());
    try {
      await detector.finish();
    } catch {
      // A probe that fails now was told as it failed; speech going on is committed as it is.
      detector.stop();
    }
    if (this.#open) this.#commitOpen();
  }

  /** The session ended: detection stops, and a live turn's engine stops waiting for audio. */
  end(reason: VoxdError): void {
    this.#detector?.stop();
    const open = this.#open;
    this.#open = undefined;
    if (open?.turn.audio instanceof LiveFeed) open.turn.audio.fail(reason);
  }

  /**
   * A live turn passed its deadline: if its speech still goes on, it is committed as it is (its
   * failure follows), and the detector starts afresh on what comes next.
   */
  late(turn: Turn): void {
    if (this.#open?.turn !== turn) return;
    this.#commitOpen();
    this.#detector?.reset();
    // A manual buffer went to the turn whole: a later commit starts from what comes next.
    if (!this.#detector) {
      this.#buffer.clear();
      this.#carry = undefined;
    }
    this.#held.settle();
  }

  /** The longest turn the buffer takes, in seconds. */
  #limitSeconds(): number {
    const configured = this.#ctx.config.max_audio_seconds;
    return configured > 0 ? Math.min(configured, BUFFER_SECONDS) : BUFFER_SECONDS;
  }

  /**
   * Frames that count toward a turn's limit: the buffer (manual commit); under server VAD the open
   * turn's, or before speech starts what the detector has still to examine.
   */
  #turnFrames(): number {
    if (this.#open) return this.#buffer.end - this.#open.start;
    return this.#detector ? this.#detector.unexamined : this.#buffer.length;
  }

  /** The rate the buffer keeps: positions on its timeline count samples at it. */
  get #rate(): number {
    return this.#arriving.rate;
  }

  /**
   * Conversion for the current format to the session model's input rate (16 kHz while it is not
   * loaded: every engine here takes it), or to the client's rate when that is lower.
   */
  #arrivingFor(): ArrivingSamples {
    const { settings, runtime } = this.#ctx;
    const model = settings.model === undefined ? undefined : registeredEntry(runtime, settings.model);
    const modelRate = model?.audioInput?.sampleRate ?? MODEL_RATE;
    return new ArrivingSamples(settings.format.rate, Math.min(settings.format.rate, modelRate));
  }

  #ms(position: number): number {
    return Math.round((position * 1000) / this.#rate);
  }

  #audio(samples: Float32Array): Audio {
    return { samples, sampleRate: this.#rate, channels: 1 };
  }

  #wholeTurn(samples: Float32Array, range: HeldRange): Turn {
    return this.#ctx.turns.open(this.#audio(samples), range, this.#rate);
  }

  #speechStarted(position: number): void {
    const { settings, runtime, turns } = this.#ctx;
    const rate = this.#rate;
    const prefix = Math.round((settings.vad!.prefixPaddingMs * rate) / 1000);
    const start = Math.max(this.#buffer.start, this.#committedTo, position - prefix);
    const model = settings.model === undefined ? undefined : registeredEntry(runtime, settings.model);
    // A streaming engine hears the turn as it is spoken (what the detector has examined of it): its
    // slot is taken now, in the model's FIFO. With turns waiting already it is taken whole at its
    // commit instead, where the limit of waiting turns is checked again.
    const feed =
      model?.family.liveInput === true && !turns.full
        ? new LiveFeed(start, () => this.#held.settle())
        : undefined;
    const turn = feed
      ? turns.open(feed, feed.range, rate)
      : this.#wholeTurn(new Float32Array(0), { from: start, to: start });
    this.#open = { turn, start, sentTo: start };
    this.#ctx.send({
      type: 'input_audio_buffer.speech_started',
      audio_start_ms: this.#ms(start),
      item_id: turn.itemId,
    });
    if (feed) turns.schedule(turn);
  }

  /**
   * Manual commit: a streaming engine hears the buffer as it is appended, in a live turn that takes
   * its slot at the first append, and the buffer keeps only what the engine has not taken. Only
   * while the model has a slot free and nobody waits for one: a live turn holds its slot until the
   * commit, and sessions that append must not keep it from requests that are ready. Otherwise the
   * buffer is searched whole at its commit, as before; a later append, once a slot is free, opens
   * the live turn with the buffer so far.
   */
  #hearAppended(): void {
    if (!this.#open) {
      const { settings, runtime, turns } = this.#ctx;
      const model = settings.model === undefined ? undefined : registeredEntry(runtime, settings.model);
      if (model?.family.liveInput !== true || turns.full || this.#buffer.length === 0) return;
      const slots = model.scheduler.snapshot();
      if (slots.queuedRequests + slots.queuedManagers > 0 || slots.activeRequests >= slots.capacity) return;
      const start = this.#buffer.start;
      const feed = new LiveFeed(start, () => this.#held.settle());
      const turn = turns.open(feed, feed.range, this.#rate);
      // No event has named the item yet: its words wait for its commit events.
      turn.heldDeltas = '';
      this.#open = { turn, start, sentTo: start };
      turns.schedule(turn);
    }
    if (!(this.#open.turn.audio instanceof LiveFeed)) return;
    this.#feedOpen(this.#buffer.end);
    this.#buffer.dropBefore(this.#open.sentTo);
    this.#held.settle();
  }

  /** The turn going on will not be transcribed: its run stops, its live engine with it. */
  #dropOpen(why: string): void {
    const open = this.#open;
    if (!open) return;
    this.#open = undefined;
    const reason = new VoxdError('E_CLIENT_GONE', why);
    open.turn.cancel.abort(reason);
    if (open.turn.audio instanceof LiveFeed) open.turn.audio.fail(reason);
  }

  /** Hands a live turn's engine its audio up to `to`. */
  #feedOpen(to: number): void {
    const open = this.#open;
    if (!open || !(open.turn.audio instanceof LiveFeed) || to <= open.sentTo) return;
    const samples = this.#buffer.slice(open.sentTo, to);
    open.sentTo = to;
    open.turn.frames += samples.length;
    open.turn.audio.push(this.#audio(samples), to);
  }

  #speechStopped(position: number, to: number): void {
    const open = this.#open;
    if (!open) return;
    this.#ctx.send({
      type: 'input_audio_buffer.speech_stopped',
      audio_end_ms: this.#ms(position),
      item_id: open.turn.itemId,
    });
    this.#commitOpen(to);
  }

  /** idle_timeout_ms passed without speech: the quiet audio is committed as a turn of its own. */
  #idleTimeout(from: number, to: number): void {
    const { turns } = this.#ctx;
    const range = { from, to };
    this.#committedTo = to;
    const turn = this.#wholeTurn(this.#buffer.slice(from, to), range);
    this.#ctx.send({
      type: 'input_audio_buffer.timeout_triggered',
      audio_start_ms: this.#ms(from),
      audio_end_ms: this.#ms(to),
      item_id: turn.itemId,
    });
    turns.committed(turn);
    turns.schedule(turn);
  }

  /** Commits the open turn with its audio up to `to` (its silence window included). */
  #commitOpen(to = this.#buffer.end): void {
    this.#feedOpen(to);
    this.#committedTo = to;
    const { turn, start } = this.#open!;
    this.#open = undefined;
    const { turns } = this.#ctx;
    if (turn.audio instanceof LiveFeed) {
      turn.audio.end();
      turns.committed(turn);
      return;
    }
    const samples = this.#buffer.slice(start, to);
    turn.audio = this.#audio(samples);
    turn.frames = samples.length;
    turn.range.to = to;
    turns.committed(turn);
    turns.schedule(turn);
  }
}

/** An append's audio bytes; a 400 showing its start when it is not strict base64. */
async function decodeAppended(audio: string | LiftedLiteral | Uint8Array): Promise<Buffer> {
  if (audio instanceof Uint8Array) return Buffer.from(audio.buffer, audio.byteOffset, audio.length);
  let decoded: Buffer | undefined;
  if (typeof audio === 'string') {
    decoded = Buffer.from(audio, 'base64');
    if (!isPaddedBase64Of(audio, decoded)) decoded = undefined;
  } else decoded = await decodePaddedBase64(audio.bytes);
  if (decoded) return decoded;
  const start =
    typeof audio === 'string'
      ? audio.slice(0, 40)
      : Buffer.from(audio.bytes.subarray(0, 40)).toString('latin1');
  throw new VoxdError('E_INVALID_REQUEST', `audio: ${showValue(start)} is not base64`, { param: 'audio' });
}
