/**
 * One Wyoming client connection: events read in order, one exchange at a time. An exchange is one
 * request to the runtime (the model's FIFO, its busy timeout, management barriers), so it holds
 * one slot at most; a closed socket cancels it and frees the slot at once.
 *
 * - `describe` -> `info`; `ping` -> `pong`.
 * - Audio: `transcribe {name?, language?}` (optional), then `audio-start`, `audio-chunk`...,
 *   `audio-stop`: a transcription (asr-exchange.ts) or, when `name` is a VAD model, voice activity
 *   events (vad-exchange.ts).
 * - TTS: `synthesize {text, voice?{name, speaker}}` -> `audio-start`, `audio-chunk`..., `audio-stop`,
 *   sent as the engine makes the audio. Streamed text: `synthesize-start {voice?}`,
 *   `synthesize-chunk {text}`... (cut anywhere), the client's `synthesize` (for older servers; not
 *   spoken again), `synthesize-stop`: each sentence is spoken (its own audio-start..audio-stop, its
 *   own request) as soon as it is complete in the text, the rest at the stop, then
 *   `synthesize-stopped`.
 * A refused or failed exchange is an `error {text, code}` event and the connection goes on; a
 * malformed frame is an `error` and the end of the connection (what follows it cannot be read).
 */
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { modelEntry, requireTask } from '../api/model-lookup.js';
import { checkInputChars, SPEECH_TASKS } from '../api/speech/input-text.js';
import { SentenceBuffer } from '../api/speech/sentence-buffer.js';
import { unalias } from '../api/speech/voice.js';
import type { Audio } from '../audio/types.js';
import { encodePcm16 } from '../audio/wav-encode.js';
import type { ServerConfig } from '../config/types.js';
import { voiceAliases } from '../engines/voice-aliases.js';
import { VoxdError } from '../errors.js';
import { toHttp } from '../http/transport/errors.js';
import type { Metrics } from '../observability/metrics.js';
import type { Runtime } from '../runtime/runtime.js';
import { AsrExchange } from './asr-exchange.js';
import { decodePcm, pcmFormat } from './audio-format.js';
import type { AudioExchange } from './exchange.js';
import { encodeEvent, FrameReader, WyomingError, type WyomingEvent } from './framing.js';
import { describeInfo } from './info.js';
import { VadExchange } from './vad-exchange.js';

/** Events read and not yet handled before the socket is paused. */
const INBOX_EVENTS = 32;

export interface ConnectionDeps {
  runtime: Runtime;
  config: ServerConfig;
  log: Logger;
  /** The server's metrics (exchanges by outcome); absent outside a server. */
  metrics?: Metrics;
}

export class WyomingConnection {
  readonly #socket: Socket;
  readonly #deps: ConnectionDeps;
  readonly #reader = new FrameReader();
  /** Aborted when the client goes: the exchange in progress is cancelled and its slot freed. */
  readonly #gone = new AbortController();
  #inbox: Promise<void> = Promise.resolve();
  #waiting = 0;
  #transcribe: { name: string | undefined; language: string | undefined } | undefined;
  #audio: AudioExchange | undefined;
  /** Streamed synthesis between synthesize-start and synthesize-stop: its voice and its text so far. */
  #streamed: { voice: unknown; text: SentenceBuffer } | undefined;
  #closing = false;
  #idle: NodeJS.Timeout | undefined;
  /** The model the exchange in progress runs on, for its metric. */
  #model: string | undefined;

  constructor(socket: Socket, deps: ConnectionDeps) {
    this.#socket = socket;
    this.#deps = deps;
    socket.on('data', (chunk: Buffer) => {
      clearTimeout(this.#idle);
      this.#read(chunk);
      if (this.#waiting === 0) this.#armIdle();
    });
    this.#armIdle();
    socket.on('close', () => {
      clearTimeout(this.#idle);
      const gone = new VoxdError('E_CLIENT_GONE', 'the Wyoming client closed the connection');
      this.#audio?.abandon(gone);
      this.#gone.abort(gone);
    });
    // A reset is followed by 'close'; unheard, it would end the process.
    socket.on('error', () => undefined);
  }

  /**
   * Closes the connection once its client has been silent for wyoming_idle_timeout_ms while voxd
   * had none of its events to work on: a client that leaves an exchange open without sending its
   * audio (a streamed transcription holding a slot) is let go; one waiting for an answer is not.
   */
  #armIdle(): void {
    const ms = this.#deps.config.wyoming_idle_timeout_ms;
    clearTimeout(this.#idle);
    if (ms > 0 && !this.#socket.destroyed) this.#idle = setTimeout(() => this.#socket.destroy(), ms).unref();
  }

  get signal(): AbortSignal {
    return this.#gone.signal;
  }

  /** Resolves once the events read so far are handled (the exchange in progress is done). */
  settled(): Promise<void> {
    return this.#inbox;
  }

  /** Ends the connection once the exchange in progress is done (the shutdown's drain). */
  async close(): Promise<void> {
    this.#closing = true;
    await this.settled();
    this.#socket.end();
  }

  #read(chunk: Buffer): void {
    if (this.#closing) return;
    let events: WyomingEvent[];
    try {
      events = this.#reader.push(chunk);
    } catch (err) {
      this.#fatal(err);
      return;
    }
    for (const event of events) {
      if (++this.#waiting >= INBOX_EVENTS) this.#socket.pause();
      this.#inbox = this.#inbox.then(async () => {
        try {
          if (!this.#gone.signal.aborted) await this.#handle(event);
        } catch (err) {
          // A failed audio exchange is over: a live engine stops waiting for audio and frees its slot.
          this.#audio?.abandon(err instanceof Error ? err : new Error(String(err)));
          this.#audio = undefined;
          this.#transcribe = undefined;
          // A streamed synthesis goes on: one sentence refused (a busy model) does not end it.
          if (!this.#gone.signal.aborted) await this.#error(err);
        }
        if (--this.#waiting < INBOX_EVENTS && this.#socket.isPaused()) this.#socket.resume();
        if (this.#waiting === 0) this.#armIdle();
      });
    }
  }

  /** A frame that cannot be read: the client hears why, and the connection ends. */
  #fatal(err: unknown): void {
    this.#closing = true;
    const { text, code } = errorOf(err);
    this.#socket.end(encodeEvent('error', { text, code }));
  }

  async #error(err: unknown): Promise<void> {
    // A fault of voxd's own, not of the event: logged in full, as a request's would be.
    if (!(err instanceof WyomingError) && toHttp(err).internal)
      this.#deps.log.error({ err }, 'wyoming event failed');
    await this.#send('error', errorOf(err));
  }

  async #send(type: string, data: Record<string, unknown> = {}, payload?: Buffer): Promise<void> {
    const socket = this.#socket;
    if (socket.destroyed || !socket.writable) return;
    // A client that stops reading holds the engine, not voxd's memory (the caller waits here).
    if (!socket.write(encodeEvent(type, data, payload))) {
      await new Promise<void>((resolve) => {
        const done = () => {
          socket.off('drain', done);
          socket.off('close', done);
          resolve();
        };
        socket.on('drain', done);
        socket.on('close', done);
      });
    }
  }

  async #handle(event: WyomingEvent): Promise<void> {
    const { data } = event;
    switch (event.type) {
      case 'describe':
        return this.#send('info', describeInfo(this.#deps.runtime));
      case 'ping':
        return this.#send('pong', typeof data['text'] === 'string' ? { text: data['text'] } : {});
      case 'transcribe':
        this.#transcribe = { name: optionalText(data, 'name'), language: optionalText(data, 'language') };
        return;
      case 'audio-start':
        // Each chunk carries its own format; the start's is checked so a bad one is refused at once.
        pcmFormat(data);
        return this.#audioStart();
      case 'audio-chunk':
        return this.#audioChunk(event);
      case 'audio-stop':
        return this.#audioStop();
      case 'synthesize':
        // Within a streamed synthesis it repeats the whole text for servers that do not stream.
        if (this.#streamed) return;
        return this.#counted('tts', () => this.#synthesize(data));
      case 'synthesize-start':
        this.#streamed = {
          voice: data['voice'],
          text: new SentenceBuffer({ maxChars: this.#deps.config.max_input_chars }),
        };
        return;
      case 'synthesize-chunk':
        return this.#synthesizeChunk(data);
      case 'synthesize-stop':
        return this.#synthesizeStop();
      default:
        // Other services' events (wake, intent, satellite...) are not voxd's: ignored, as the
        // library's servers ignore what they do not handle.
        return;
    }
  }

  /**
   * The model an audio exchange goes to: transcribe's `name` (a speech recognition or a VAD model),
   * else wyoming_asr_model, else the first ASR model.
   */
  async #audioModel(name: string | undefined): Promise<{ id: string; task: string }> {
    const { runtime, config } = this.#deps;
    const id = name ?? config.wyoming_asr_model ?? runtime.snapshots().find((m) => m.task === 'asr')?.id;
    if (id === undefined)
      throw new VoxdError('E_MODEL_NOT_FOUND', 'transcribe: this server has no speech recognition model');
    const entry = await modelEntry(runtime, id);
    requireTask(entry.config, ['asr', 'vad'], 'Wyoming transcribe');
    return { id: entry.id, task: entry.config.task };
  }

  async #audioStart(): Promise<void> {
    const asked = this.#transcribe;
    const model = await this.#audioModel(asked?.name);
    const context = {
      runtime: this.#deps.runtime,
      config: this.#deps.config,
      log: this.#deps.log,
      signal: this.#gone.signal,
      send: (type: string, data?: Record<string, unknown>, payload?: Buffer) =>
        this.#send(type, data, payload),
    };
    if (model.task === 'vad') {
      this.#audio = new VadExchange(context, model.id);
      return;
    }
    const asr = new AsrExchange(context, model.id, asked?.language);
    await asr.start();
    this.#audio = asr;
  }

  #audioChunk(event: WyomingEvent): void | Promise<void> {
    const exchange = this.#audio;
    if (!exchange)
      throw new WyomingError(
        'invalid_event',
        'audio-chunk: no audio-start before it (send transcribe and audio-start first)',
      );
    if (!event.payload) return;
    return exchange.chunk(decodePcm(event.payload, pcmFormat(event.data)));
  }

  async #audioStop(): Promise<void> {
    const exchange = this.#audio;
    this.#audio = undefined;
    this.#transcribe = undefined;
    if (!exchange) throw new WyomingError('invalid_event', 'audio-stop: no audio-start before it');
    await this.#counted(exchange.kind, async () => {
      this.#model = exchange.model;
      await exchange.stop();
    });
  }

  /**
   * Runs one exchange and counts how it ended, under the model it ran on (#model), only when that
   * is a registered model (a name a client made up is no label value).
   */
  async #counted(kind: 'asr' | 'tts' | 'vad', exchange: () => Promise<void>): Promise<void> {
    this.#model = undefined;
    const count = (outcome: 'completed' | 'failed' | 'cancelled') => {
      const model = this.#model;
      if (model !== undefined && this.#deps.runtime.has(model))
        this.#deps.metrics?.exchange('wyoming', kind, model, outcome);
    };
    try {
      await exchange();
      count('completed');
    } catch (err) {
      count(this.#gone.signal.aborted ? 'cancelled' : 'failed');
      throw err;
    }
  }

  async #synthesizeChunk(data: Record<string, unknown>): Promise<void> {
    const streamed = this.#streamed;
    if (!streamed) throw new WyomingError('invalid_event', 'synthesize-chunk: no synthesize-start before it');
    const text = data['text'];
    if (typeof text !== 'string')
      throw new WyomingError('invalid_event', `synthesize-chunk: text ${JSON.stringify(text)} is not text`);
    for (const sentence of streamed.text.push(text))
      await this.#synthesize({ text: sentence, voice: streamed.voice });
  }

  async #synthesizeStop(): Promise<void> {
    const streamed = this.#streamed;
    this.#streamed = undefined;
    if (!streamed) throw new WyomingError('invalid_event', 'synthesize-stop: no synthesize-start before it');
    const rest = streamed.text.flush();
    if (rest) await this.#counted('tts', () => this.#synthesize({ text: rest, voice: streamed.voice }));
    await this.#send('synthesize-stopped');
  }

  async #synthesize(data: Record<string, unknown>): Promise<void> {
    const text = data['text'];
    if (typeof text !== 'string' || text.trim() === '')
      throw new WyomingError(
        'invalid_event',
        `synthesize: text ${JSON.stringify(text)} is not text to speak`,
      );
    const voice = (data['voice'] ?? {}) as Record<string, unknown>;
    const named = typeof voice['name'] === 'string' && voice['name'] !== '' ? voice['name'] : undefined;
    const { runtime, config } = this.#deps;
    const [modelName, voiceName] = named === undefined ? [undefined, undefined] : splitVoice(named);
    const id = modelName ?? runtime.snapshots().find((m) => SPEECH_TASKS.includes(m.task as never))?.id;
    if (id === undefined)
      throw new VoxdError('E_MODEL_NOT_FOUND', 'synthesize: this server has no speech model');
    const entry = await modelEntry(runtime, id);
    requireTask(entry.config, SPEECH_TASKS, 'Wyoming synthesize');
    this.#model = entry.id;
    checkInputChars(text, 'text', entry.config, config);
    const speaker =
      typeof voice['speaker'] === 'string' && voice['speaker'] !== '' ? voice['speaker'] : undefined;
    const wanted = voiceName ?? speaker;
    const aliases = voiceAliases(entry.family.voiceAliases, entry.config.voice_aliases);
    const started = performance.now();
    let shape: { rate: number; channels: number } | undefined;
    const chunk = async (audio: Audio) => {
      if (!shape) {
        shape = { rate: audio.sampleRate, channels: audio.channels };
        await this.#send('audio-start', { rate: shape.rate, width: 2, channels: shape.channels });
      }
      await this.#send(
        'audio-chunk',
        { rate: shape.rate, width: 2, channels: shape.channels },
        encodePcm16(audio),
      );
    };
    const outcome = await runtime.infer(
      entry.id,
      {
        task: entry.config.task,
        text,
        voiceId: wanted === undefined ? undefined : unalias(wanted, aliases),
        options: { ...entry.config.default_request_options },
      },
      {
        signal: this.#gone.signal,
        eventsOnly: true,
        onEvent: (event) => (event.type === 'audio' ? chunk(event.audio) : undefined),
      },
    );
    // An engine that answers whole: its audio in one-second chunks.
    const whole = outcome.result.audio;
    if (!shape && whole) {
      const step = whole.sampleRate * whole.channels;
      for (let at = 0; at < whole.samples.length; at += step)
        await chunk({ ...whole, samples: whole.samples.subarray(at, at + step) });
    }
    if (!shape) throw new VoxdError('E_ENGINE', `model '${entry.id}' produced no audio output`);
    await this.#send('audio-stop');
    this.#deps.log.info(
      { protocol: 'wyoming', model: entry.id, chars: text.length, ms: performance.now() - started },
      `wyoming speech from ${entry.id}`,
    );
  }
}

function optionalText(data: Record<string, unknown>, key: string): string | undefined {
  const value = data[key];
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string')
    throw new WyomingError('invalid_event', `${key}: ${JSON.stringify(value)} is not text`);
  return value;
}

/** `model` or `model:voice`. */
function splitVoice(name: string): [string, string | undefined] {
  const at = name.indexOf(':');
  return at < 0 ? [name, undefined] : [name.slice(0, at), name.slice(at + 1) || undefined];
}

/** The `error` event's fields: the message as voxd words it, and its code. */
function errorOf(err: unknown): { text: string; code: string } {
  if (err instanceof WyomingError) return { text: err.message, code: err.code };
  const { error } = toHttp(err).body as { error: { message: string; code: string } };
  return { text: error.message, code: error.code };
}
