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
 * once 10 s are waiting.
 */
import { vadProbe } from '../api/vad/probe.js';
import { SampleBuffer } from '../api/vad/sample-buffer.js';
import { type DetectorSettings, SpeechDetector } from '../api/vad/speech-detector.js';
import { toMono } from '../audio/convert.js';
import type { Audio } from '../audio/types.js';
import type { AudioExchange, ExchangeContext } from './exchange.js';
import { WyomingError } from './framing.js';

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
  #detector: { rate: number; detector: SpeechDetector } | undefined;
  #failure: unknown;

  constructor(ctx: ExchangeContext, model: string) {
    this.#ctx = ctx;
    this.model = model;
  }

  async chunk(audio: Audio): Promise<void> {
    if (this.#failure !== undefined) throw this.#failure;
    this.#detector ??= this.#watch(audio.sampleRate);
    const { rate, detector } = this.#detector;
    if (audio.sampleRate !== rate)
      throw new WyomingError(
        'invalid_audio',
        `audio-chunk: rate ${audio.sampleRate} differs from this stream's ${rate}; one stream has one rate`,
      );
    this.#buffer.append(toMono(audio).samples);
    detector.update();
    this.#buffer.dropBefore(detector.oldestNeeded);
    while (detector.unexamined > rate * BACKLOG_SECONDS) {
      detector.update();
      await detector.settled();
      if (this.#failure !== undefined) throw this.#failure;
    }
  }

  async stop(): Promise<void> {
    if (this.#failure === undefined) await this.#detector?.detector.finish();
    // A probe that failed while the last audio was examined stopped the detector: it is told here.
    if (this.#failure !== undefined) throw this.#failure;
  }

  abandon(): void {
    this.#detector?.detector.stop();
  }

  #watch(rate: number): { rate: number; detector: SpeechDetector } {
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
    return { rate, detector };
  }
}
