/**
 * One Wyoming client connection: events read in order, one exchange at a time. An exchange is one
 * request to the runtime (the model's FIFO, its busy timeout, management barriers), so it holds
 * one slot at most; a closed socket cancels it and frees the slot at once.
 *
 * - `describe` -> `info`; `ping` -> `pong`.
 * - ASR: `transcribe {name?, language?}` (optional), then `audio-start`, `audio-chunk`...,
 *   `audio-stop` -> `transcript {text, language}`. A model whose engine takes audio as it arrives
 *   (pocketsphinx) starts at `audio-start`, takes its slot then and streams `transcript-start`,
 *   `transcript-chunk {text}`... while the audio flows, then `transcript` and `transcript-stop`.
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
import { PushQueue } from '../util/push-queue.js';
import { decodePcm, pcmFormat } from './audio-format.js';
import { encodeEvent, FrameReader, WyomingError, type WyomingEvent } from './framing.js';
import { describeInfo } from './info.js';

/** The longest utterance an ASR exchange takes (or max_audio_seconds if less): its audio is held until audio-stop. */
export const UTTERANCE_SECONDS = 120;

/**
 * Audio a streaming engine is handed at once: clients send 20-100 ms chunks, and each hand-over is
 * a round trip to the runner; a quarter second is what pocketsphinx decodes between its guesses.
 */
const LIVE_PIECE_SECONDS = 0.25;

/** Events read and not yet handled before the socket is paused. */
const INBOX_EVENTS = 32;

export interface ConnectionDeps {
  runtime: Runtime;
  config: ServerConfig;
  log: Logger;
  /** The server's metrics (exchanges by outcome); absent outside a server. */
  metrics?: Metrics;
}

/** An ASR exchange between audio-start and audio-stop. */
interface Utterance {
  model: string;
  language: string | undefined;
  /** Seconds of audio so far (chunks may differ in rate). */
  seconds: number;
  /** Collected audio: all of it (a model that takes it whole), or what waits for the live feed. */
  pieces: Audio[];
  /** Seconds in `pieces`. */
  pieceSeconds: number;
  live: PushQueue<Audio> | undefined;
  /** The live run, started at audio-start. */
  running: Promise<{ text: string; language: string | undefined }> | undefined;
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
  #utterance: Utterance | undefined;
  /** Streamed synthesis between synthesize-start and synthesize-stop: its voice and its text so far. */
  #streamed: { voice: unknown; text: SentenceBuffer } | undefined;
  #closing = false;
  /** The model the exchange in progress runs on, for its metric. */
  #model: string | undefined;

  constructor(socket: Socket, deps: ConnectionDeps) {
    this.#socket = socket;
    this.#deps = deps;
    socket.on('data', (chunk: Buffer) => this.#read(chunk));
    socket.on('close', () => {
      this.#utterance?.live?.fail(new VoxdError('E_CLIENT_GONE', 'the Wyoming client closed the connection'));
      this.#gone.abort(new VoxdError('E_CLIENT_GONE', 'the Wyoming client closed the connection'));
    });
    // A reset is followed by 'close'; unheard, it would end the process.
    socket.on('error', () => undefined);
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
          this.#utterance = undefined;
          this.#transcribe = undefined;
          // A streamed synthesis goes on: one sentence refused (a busy model) does not end it.
          if (!this.#gone.signal.aborted) await this.#error(err);
        }
        if (--this.#waiting < INBOX_EVENTS && this.#socket.isPaused()) this.#socket.resume();
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
        return this.#counted('asr', () => this.#audioStop());
      case 'synthesize':
        // Within a streamed synthesis it repeats the whole text for servers that do not stream.
        if (this.#streamed) return;
        return this.#counted('tts', () => this.#synthesize(data));
      case 'synthesize-start':
        this.#streamed = { voice: data['voice'], text: new SentenceBuffer() };
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

  /** The model an ASR exchange names (transcribe's `name`), else wyoming_asr_model, else the first ASR model. */
  async #asrModel(name: string | undefined): Promise<string> {
    const { runtime, config } = this.#deps;
    const id = name ?? config.wyoming_asr_model ?? runtime.snapshots().find((m) => m.task === 'asr')?.id;
    if (id === undefined)
      throw new VoxdError('E_MODEL_NOT_FOUND', 'transcribe: this server has no speech recognition model');
    const entry = await modelEntry(runtime, id);
    requireTask(entry.config, ['asr'], 'Wyoming transcribe');
    return entry.id;
  }

  async #audioStart(): Promise<void> {
    const asked = this.#transcribe;
    const model = await this.#asrModel(asked?.name);
    const entry = this.#deps.runtime.get(model);
    const utterance: Utterance = {
      model,
      language: asked?.language,
      seconds: 0,
      pieces: [],
      pieceSeconds: 0,
      live: undefined,
      running: undefined,
    };
    if (entry.family.liveInput) {
      // A streaming engine hears the utterance as it arrives and says what it has heard so far.
      const live = new PushQueue<Audio>();
      utterance.live = live;
      await this.#send('transcript-start', asked?.language ? { language: asked.language } : {});
      utterance.running = this.#recognise(utterance, { liveAudio: live }, async (text) => {
        await this.#send('transcript-chunk', { text });
      });
      // Its failure is told at audio-stop; until then it must not be an unhandled rejection.
      utterance.running.catch(() => undefined);
    }
    this.#utterance = utterance;
  }

  #audioChunk(event: WyomingEvent): void {
    const utterance = this.#utterance;
    if (!utterance)
      throw new WyomingError(
        'invalid_event',
        'audio-chunk: no audio-start before it (send transcribe and audio-start first)',
      );
    if (!event.payload) return;
    const audio = decodePcm(event.payload, pcmFormat(event.data));
    const seconds = utterance.seconds + audio.samples.length / audio.channels / audio.sampleRate;
    const configured = this.#deps.config.max_audio_seconds;
    const limit = configured > 0 ? Math.min(configured, UTTERANCE_SECONDS) : UTTERANCE_SECONDS;
    if (seconds > limit)
      throw new VoxdError(
        'E_AUDIO_TOO_LONG',
        `audio: the utterance is longer than ${limit} s; send audio-stop sooner`,
      );
    utterance.seconds = seconds;
    const last = utterance.pieces.at(-1);
    if (utterance.live && last && (last.sampleRate !== audio.sampleRate || last.channels !== audio.channels))
      this.#feed(utterance);
    utterance.pieces.push(audio);
    utterance.pieceSeconds += audio.samples.length / audio.channels / audio.sampleRate;
    if (utterance.live && utterance.pieceSeconds >= LIVE_PIECE_SECONDS) this.#feed(utterance);
  }

  /** Hands a streaming engine the audio waiting for it, as one piece. */
  #feed(utterance: Utterance): void {
    if (utterance.pieces.length === 0) return;
    utterance.live!.push(joined(utterance.pieces));
    utterance.pieces = [];
    utterance.pieceSeconds = 0;
  }

  async #audioStop(): Promise<void> {
    const utterance = this.#utterance;
    this.#utterance = undefined;
    this.#transcribe = undefined;
    if (!utterance) throw new WyomingError('invalid_event', 'audio-stop: no audio-start before it');
    this.#model = utterance.model;
    const started = performance.now();
    let result: { text: string; language: string | undefined };
    if (utterance.live) {
      this.#feed(utterance);
      utterance.live.end();
      result = await utterance.running!;
    } else result = await this.#recognise(utterance, { audio: joined(utterance.pieces) });
    const language = result.language ?? utterance.language;
    await this.#send('transcript', { text: result.text, ...(language ? { language } : {}) });
    if (utterance.live) await this.#send('transcript-stop');
    this.#deps.log.info(
      {
        protocol: 'wyoming',
        model: utterance.model,
        audio_s: utterance.seconds,
        ms: performance.now() - started,
      },
      `wyoming transcript from ${utterance.model}`,
    );
  }

  async #recognise(
    utterance: Utterance,
    input: { audio: Audio } | { liveAudio: PushQueue<Audio> },
    onText?: (text: string) => Promise<void>,
  ): Promise<{ text: string; language: string | undefined }> {
    const { runtime } = this.#deps;
    const entry = runtime.get(utterance.model);
    const options = {
      ...entry.config.default_request_options,
      ...(utterance.language ? { language: utterance.language } : {}),
    };
    const outcome = await runtime.infer(
      utterance.model,
      { task: 'asr', ...input, language: utterance.language, options },
      {
        signal: this.#gone.signal,
        onEvent: onText
          ? (event) => (event.type === 'text' && event.delta ? onText(event.delta) : undefined)
          : undefined,
      },
    );
    return { text: (outcome.result.text ?? '').trim(), language: outcome.result.language };
  }

  /**
   * Runs one exchange and counts how it ended, under the model it ran on (#model), only when that
   * is a registered model (a name a client made up is no label value).
   */
  async #counted(kind: 'asr' | 'tts', exchange: () => Promise<void>): Promise<void> {
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

/** The pieces as one Audio (the first piece's rate and channels; later ones must match). */
function joined(pieces: Audio[]): Audio {
  const first = pieces[0];
  if (!first)
    throw new WyomingError('invalid_audio', 'audio-stop: no audio between audio-start and audio-stop');
  for (const p of pieces)
    if (p.sampleRate !== first.sampleRate || p.channels !== first.channels)
      throw new WyomingError('invalid_audio', 'audio-chunk: the format changed within one utterance');
  const samples = new Float32Array(pieces.reduce((n, p) => n + p.samples.length, 0));
  let at = 0;
  for (const p of pieces) {
    samples.set(p.samples, at);
    at += p.samples.length;
  }
  return { samples, sampleRate: first.sampleRate, channels: first.channels };
}

/** The `error` event's fields: the message as voxd words it, and its code. */
function errorOf(err: unknown): { text: string; code: string } {
  if (err instanceof WyomingError) return { text: err.message, code: err.code };
  const { error } = toHttp(err).body as { error: { message: string; code: string } };
  return { text: error.message, code: error.code };
}
