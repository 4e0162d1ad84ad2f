/**
 * Voice activity over Wyoming: after `transcribe {name: <a VAD model>}`, the audio between
 * audio-start and audio-stop is watched for speech, and the client hears `voice-started
 * {timestamp}` where speech starts and `voice-stopped {timestamp}` where it ends (milliseconds of
 * audio from audio-start), while the audio still flows. A speech that is still going at audio-stop
 * is stopped at the end of the audio. Nothing else follows, so a client that wants to know the
 * exchange is over sends `ping` and waits for its `pong` (events are answered in order).
 *
 * The stream is examined as a realtime session's server VAD examines it (src/api/vad): short
 * probes of the model, each one request in its FIFO, so an exchange holds no slot between probes;
 * speech ends after 500 ms of silence. The stream has no length limit: the audio already examined
 * is dropped, and a client sending faster than the model examines waits (its socket is paused)
 * once 10 s are waiting. The audio is converted to the model's rate, mono, as it arrives, and what
 * is held counts against the server's byte budget.
 */
import { vadProbe } from '../api/vad/probe.js';
import { SampleBuffer } from '../api/vad/sample-buffer.js';
import { type DetectorSettings, SpeechDetector } from '../api/vad/speech-detector.js';
import { ArrivingAudio } from './arriving-audio.js';
import type { PcmFormat } from './audio-format.js';
import type { AudioExchange, ExchangeContext } from './exchange.js';

/** silero's usual threshold, no padding (the client has its own audio), OpenAI's silence window. */
const SETTINGS: DetectorSettings = {
  threshold: 0.5,
  prefixPaddingMs: 0,
  silenceDurationMs: 500,
  idleTimeoutMs: 0,
};

/** Unexamined audio past which the client is made to wait. */
const BACKLOG_SECONDS = 10;

export class VadExchange implements AudioExchange {
  readonly kind = 'vad';
  readonly model: string;
  readonly #ctx: ExchangeContext;
  readonly #buffer = new SampleBuffer();
  readonly #audio: ArrivingAudio;
  readonly #detector: SpeechDetector;
  /** Bytes of the buffer taken from the budget. */
  #held = 0;
  #failure: unknown;

  constructor(ctx: ExchangeContext, model: string) {
    this.#ctx = ctx;
    this.model = model;
    this.#audio = new ArrivingAudio(ctx.rate);
    this.#detector = this.#watch(ctx.rate);
  }

  async chunk(payload: Buffer, format: PcmFormat): Promise<void> {
    if (this.#failure !== undefined) throw this.#failure;
    const samples = await this.#audio.push(payload, format);
    if (this.#ctx.signal.aborted) return;
    this.#append(samples);
    const detector = this.#detector;
    while (detector.unexamined > this.#ctx.rate * BACKLOG_SECONDS) {
      detector.update();
      await detector.settled();
      if (this.#failure !== undefined) throw this.#failure;
    }
  }

  #append(samples: Float32Array): void {
    this.#buffer.append(samples);
    this.#detector.update();
    this.#buffer.dropBefore(this.#detector.oldestNeeded);
    const held = this.#buffer.length * Float32Array.BYTES_PER_ELEMENT;
    if (held > this.#held) this.#ctx.bytes.hold(held - this.#held);
    else this.#ctx.bytes.free(this.#held - held);
    this.#held = held;
  }

  async stop(): Promise<void> {
    if (this.#failure === undefined) {
      this.#append(this.#audio.flush());
      await this.#detector.finish();
    }
    // A probe that failed while the last audio was examined stopped the detector: it is told here.
    if (this.#failure !== undefined) throw this.#failure;
  }

  abandon(): void {
    this.#detector.stop();
  }

  #watch(rate: number): SpeechDetector {
    const ms = (position: number) => Math.round((position / rate) * 1000);
    const send = (type: string, position: number) => {
      void this.#ctx.send(type, { timestamp: ms(position) });
    };
    const detector = new SpeechDetector(
      this.#buffer,
      rate,
      SETTINGS,
      vadProbe(this.#ctx.runtime, this.model, rate, this.#ctx.signal),
      {
        started: (position) => send('voice-started', position),
        examined: () => undefined,
        stopped: (position) => send('voice-stopped', position),
        idle: () => undefined,
        failed: (err) => {
          this.#failure = err;
          detector.stop();
        },
      },
      Number.POSITIVE_INFINITY,
    );
    return detector;
  }
}
