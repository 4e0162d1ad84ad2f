/**
 * A Wyoming transcription: audio-start, audio-chunk..., audio-stop -> `transcript {text, language}`.
 *
 * A model whose engine takes audio as it arrives (pocketsphinx) answers `transcript-start` at once
 * and `transcript-stop` after the transcript. Between them it sends `transcript-chunk {text}`
 * while the audio still flows, when the audio comes at speaking pace (a microphone): from the
 * moment the first second of audio has taken at least half a second to arrive, the engine hears
 * the utterance as it comes, holding its slot from then on. Audio that comes faster (a recording
 * sent whole) is transcribed at audio-stop in one search over the whole utterance, as the HTTP
 * route does: the same words, for less work than searching it step by step, and nobody is waiting
 * for words that are still being spoken; its words still come as `transcript-chunk`s before the
 * `transcript`, as `supports_transcript_streaming` promises. Either way the chunks join into the
 * transcript's text: words once sent are never taken back.
 *
 * Each chunk is converted to the model's rate, mono, as it arrives (arriving-audio.ts), and what
 * the exchange holds is taken from the server's byte budget: past it the exchange ends with
 * `body_budget`, as an HTTP body past it is refused.
 */
import { transcriptionRequest } from '../api/transcription/engine-request.js';
import { type Audio, heldSamples } from '../audio/types.js';
import { VoxdError } from '../errors.js';
import { PushQueue } from '../util/push-queue.js';
import { ArrivingAudio } from './arriving-audio.js';
import type { PcmFormat } from './audio-format.js';
import type { AudioExchange, ExchangeContext } from './exchange.js';
import { WyomingError } from './framing.js';

/** The longest utterance an ASR exchange takes (or max_audio_seconds if less): its audio is held until audio-stop. */
export const UTTERANCE_SECONDS = 120;

/**
 * Audio a streaming engine is handed at once: clients send 20-100 ms chunks, and each hand-over is
 * a round trip to the runner; a quarter second is what pocketsphinx decodes between its guesses.
 */
const LIVE_PIECE_SECONDS = 0.25;

/** Audio after which the pace is judged, and the least wall time per second of it that is speaking pace. */
const PACE_AFTER_SECONDS = 1;
const PACE_RATIO = 0.5;

export class AsrExchange implements AudioExchange {
  readonly kind = 'asr';
  readonly model: string;
  readonly #ctx: ExchangeContext;
  readonly #language: string | undefined;
  /** The engine can hear the utterance as it arrives. */
  readonly #streams: boolean;
  readonly #startedAt = performance.now();
  readonly #audio: ArrivingAudio;
  /** Seconds of audio so far. */
  #seconds = 0;
  /** Audio held, at the model's rate: all of it (a whole-utterance search), or what waits for the live feed. */
  #pieces: Float32Array[] = [];
  #pieceSamples = 0;
  #live:
    | { audio: PushQueue<Audio>; result: Promise<{ text: string; language: string | undefined }> }
    | undefined;

  constructor(ctx: ExchangeContext, model: string, language: string | undefined) {
    this.#ctx = ctx;
    this.model = model;
    this.#language = language;
    this.#streams = ctx.runtime.get(model).family.liveInput === true;
    this.#audio = new ArrivingAudio(ctx.rate);
  }

  /** Sends transcript-start for a streaming engine (its transcript-chunks may follow). */
  async start(): Promise<void> {
    if (this.#streams)
      await this.#ctx.send('transcript-start', this.#language ? { language: this.#language } : {});
  }

  async chunk(payload: Buffer, format: PcmFormat): Promise<void> {
    const seconds = this.#seconds + ArrivingAudio.seconds(payload, format);
    const configured = this.#ctx.config.max_audio_seconds;
    const limit = configured > 0 ? Math.min(configured, UTTERANCE_SECONDS) : UTTERANCE_SECONDS;
    if (seconds > limit)
      throw new VoxdError(
        'E_AUDIO_TOO_LONG',
        `audio: the utterance is longer than ${limit} s; send audio-stop sooner`,
      );
    const samples = await this.#audio.push(payload, format);
    // Abandoned while the chunk was converted: nothing more starts.
    if (this.#ctx.signal.aborted) return;
    this.#keep(samples);
    this.#seconds = seconds;
    if (!this.#live && this.#streams && this.#atSpeakingPace()) this.#goLive();
    if (this.#live && this.#pieceSamples >= LIVE_PIECE_SECONDS * this.#ctx.rate) this.#feed();
  }

  /** Holds `samples` until they are searched or fed, once the budget has room for them. */
  #keep(samples: Float32Array): void {
    if (samples.length === 0) return;
    this.#ctx.bytes.hold(samples.byteLength);
    this.#pieces.push(samples);
    this.#pieceSamples += samples.length;
  }

  #atSpeakingPace(): boolean {
    if (this.#seconds < PACE_AFTER_SECONDS) return false;
    return (performance.now() - this.#startedAt) / 1000 >= this.#seconds * PACE_RATIO;
  }

  readonly #chunk = (text: string): Promise<void> => this.#ctx.send('transcript-chunk', { text });

  /** The engine takes its slot and hears the audio so far, then the rest as it comes. */
  #goLive(): void {
    const audio = new PushQueue<Audio>();
    const result = this.#recognise({ liveAudio: audio }, this.#chunk);
    // Its failure is told at audio-stop; until then it must not be an unhandled rejection.
    result.catch(() => undefined);
    this.#live = { audio, result };
  }

  /** Hands the live engine the audio waiting for it, as one piece: it is the engine's from then on. */
  #feed(): void {
    if (this.#pieces.length === 0) return;
    const piece = this.#joined();
    this.#live!.audio.push(piece);
    this.#ctx.bytes.free(heldSamples(piece).byteLength);
  }

  async stop(): Promise<void> {
    this.#keep(this.#audio.flush());
    const live = this.#live;
    let result: { text: string; language: string | undefined };
    if (live) {
      this.#feed();
      live.audio.end();
      result = await live.result;
    } else {
      if (this.#pieces.length === 0)
        throw new WyomingError('invalid_audio', 'audio-stop: no audio between audio-start and audio-stop');
      result = await this.#recognise({ audio: this.#joined() }, this.#streams ? this.#chunk : undefined);
    }
    const language = result.language ?? this.#language;
    await this.#ctx.send('transcript', { text: result.text, ...(language ? { language } : {}) });
    if (this.#streams) await this.#ctx.send('transcript-stop');
    this.#ctx.log.info(
      {
        protocol: 'wyoming',
        model: this.model,
        audio_s: this.#seconds,
        live: live !== undefined,
        ms: performance.now() - this.#startedAt,
      },
      `wyoming transcript from ${this.model}`,
    );
  }

  /** The pieces held, as one Audio; the exchange holds nothing more. */
  #joined(): Audio {
    const pieces = this.#pieces;
    const samples = pieces.length === 1 ? pieces[0]! : new Float32Array(this.#pieceSamples);
    if (pieces.length > 1) {
      let at = 0;
      for (const p of pieces) {
        samples.set(p, at);
        at += p.length;
      }
    }
    this.#pieces = [];
    this.#pieceSamples = 0;
    return { samples, sampleRate: this.#ctx.rate, channels: 1 };
  }

  abandon(reason: Error): void {
    this.#live?.audio.fail(reason);
  }

  async #recognise(
    input: { audio: Audio } | { liveAudio: PushQueue<Audio> },
    onText?: (text: string) => Promise<void>,
  ): Promise<{ text: string; language: string | undefined }> {
    const { runtime, signal } = this.#ctx;
    const request = transcriptionRequest(runtime.get(this.model), { language: this.#language }, input);
    const outcome = await runtime.infer(this.model, request, {
      signal,
      onEvent: onText
        ? (event) => (event.type === 'text' && event.delta ? onText(event.delta) : undefined)
        : undefined,
    });
    return { text: (outcome.result.text ?? '').trim(), language: outcome.result.language };
  }
}
