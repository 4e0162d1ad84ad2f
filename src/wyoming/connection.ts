/**
 * One Wyoming client connection on the session shell (src/session/session-shell.ts): events read
 * whole and handled in order, one exchange at a time. An exchange is one request to the runtime
 * (the model's FIFO, its busy timeout, management barriers), so it holds one slot at most; the
 * connection's end cancels it and frees the slot at once.
 *
 * - `describe` -> `info`; `ping` -> `pong`.
 * - Audio: `transcribe {name?, language?}` (optional), then `audio-start`, `audio-chunk`...,
 *   `audio-stop`: a transcription (asr-exchange.ts) or, when `name` is a VAD model, voice activity
 *   events (vad-exchange.ts), each open from its audio-start (open-exchange.ts). An audio-start while
 *   one is open begins a new utterance: the open one is abandoned without an answer.
 * - TTS: `synthesize {text, voice?{name, speaker}}` -> `audio-start`, `audio-chunk`..., `audio-stop`
 *   (synthesis.ts). Streamed text: `synthesize-start {voice?}`, `synthesize-chunk {text}`... (cut
 *   anywhere), the client's `synthesize` (for older servers; not spoken again), `synthesize-stop`:
 *   each sentence is spoken (its own audio-start..audio-stop, its own request) as soon as it is
 *   complete in the text, the rest at the stop, then `synthesize-stopped`.
 * A refused or failed exchange is an `error {text, code}` event and the connection goes on; a
 * malformed frame is an `error` and the end of the connection (what follows it cannot be read).
 *
 * Bounds (docs/wyoming.md): only whole events are activity (wyoming_idle_timeout_ms), a begun event
 * must be whole within EVENT_DEADLINE_MS, an answer waits for a client that stops reading at most
 * live_ingest.send_timeout_ms, a transcription ends within live_ingest.total_timeout_ms of its
 * audio-start, and the audio held counts against the server's byte budget.
 */
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { modelEntry, requireTask } from '../api/model-lookup.js';
import { SentenceBuffer } from '../api/speech/sentence-buffer.js';
import type { Codec } from '../audio/ffmpeg.js';
import { liveIngestLimits } from '../config/live-ingest-limits.js';
import type { ServerConfig } from '../config/types.js';
import { describeError, showValue, VoxdError } from '../errors.js';
import type { Metrics } from '../observability/metrics.js';
import type { Runtime } from '../runtime/runtime.js';
import type { SessionHost } from '../session/session-host.js';
import { drained, SessionShell } from '../session/session-shell.js';
import { raceAbort } from '../util/wait.js';
import { DEFAULT_INPUT_RATE } from './arriving-audio.js';
import { AsrExchange } from './asr-exchange.js';
import { pcmFormat } from './audio-format.js';
import type { ExchangeContext } from './exchange.js';
import { farewell } from './farewell.js';
import { encodeEvent, FrameReader, WyomingError, type WyomingEvent } from './framing.js';
import { describeInfo } from './info.js';
import { type ExchangeDeadline, OpenExchange } from './open-exchange.js';
import { synthesize } from './synthesis.js';
import { VadExchange } from './vad-exchange.js';

/** Events read and not yet handled before the socket is paused. */
const INBOX_EVENTS = 32;
/** Or payload bytes of them: two of the largest payloads, where 32 could hold 128 MiB. */
const INBOX_BYTES = 8 * 1024 * 1024;

/**
 * The longest one event may take to arrive once its first byte has (or wyoming_idle_timeout_ms if
 * shorter): a client's events are a few KiB sent at once, and the largest the framing admits
 * (a 4 MiB payload and a 1 MiB data block) needs only 175 KB/s. Without it a client trickling a
 * byte now and then held its connection for good, since bytes are not whole events (F12).
 */
export const EVENT_DEADLINE_MS = 30_000;

export interface ConnectionDeps {
  runtime: Runtime;
  config: ServerConfig;
  log: Logger;
  /** The server's byte budget, connection count, memory release and clock. */
  host: SessionHost;
  /** The server's metrics (exchanges by outcome); absent outside a server. */
  metrics?: Metrics;
  /** ffmpeg, so a voice_dir voice reads as on HTTP; without it only the WAVs voxd reads itself. */
  codec?: Codec;
}

/** An event read, with the bytes its payload took from the budget, or why it took none. */
interface Received {
  event: WyomingEvent;
  held: number;
  refused?: unknown;
}

/** The audio exchange open now, and its end told to the client (or kept quiet). */
interface OpenAudio {
  open: OpenExchange;
  told: Promise<void>;
  /** Abandoned by the connection (a new audio-start, a shutdown), not failed on its own. */
  cancelled: boolean;
  /** Its end is not told: the client began another utterance. */
  quiet: boolean;
}

const AUDIO_EVENTS = new Set(['audio-start', 'audio-chunk', 'audio-stop']);

export class WyomingConnection {
  readonly #socket: Socket;
  readonly #deps: ConnectionDeps;
  readonly #reader = new FrameReader();
  readonly #shell: SessionShell;
  #transcribe: { name: string | undefined; language: string | undefined } | undefined;
  #audio: OpenAudio | undefined;
  /** Streamed synthesis between synthesize-start and synthesize-stop: its voice and its text so far. */
  #streamed: { voice: unknown; text: SentenceBuffer } | undefined;
  #closing = false;

  constructor(socket: Socket, deps: ConnectionDeps) {
    this.#socket = socket;
    this.#deps = deps;
    const idleMs = deps.config.wyoming_idle_timeout_ms;
    this.#shell = new SessionShell(deps.host, {
      what: 'Wyoming connection',
      protocol: 'wyoming',
      inboxEvents: INBOX_EVENTS,
      inboxBytes: INBOX_BYTES,
      idleMs,
      idleSetting: 'wyoming_idle_timeout_ms',
      eventMs: idleMs > 0 ? Math.min(idleMs, EVENT_DEADLINE_MS) : EVENT_DEADLINE_MS,
      pause: () => socket.pause(),
      resume: () => {
        if (!this.#closing) socket.resume();
      },
      expire: (why) => this.#end(why),
    });
    socket.on('data', (chunk: Buffer) => this.#read(chunk));
    socket.on('close', () =>
      this.#shell.leave(new VoxdError('E_CLIENT_GONE', 'the Wyoming client closed the connection')),
    );
    // A reset is followed by 'close'; unheard, it would end the process.
    socket.on('error', () => undefined);
  }

  /**
   * Ends the connection once the events read so far are handled (the shutdown's drain): an
   * utterance still waiting for its audio cannot be finished (nothing more is read), so it is
   * abandoned and its client told `shutting_down`.
   */
  async close(): Promise<void> {
    this.#closing = true;
    await this.#shell.settled();
    const shutdown = new VoxdError(
      'E_SHUTTING_DOWN',
      'voxd is shutting down; the utterance was not finished',
    );
    await this.#abandonAudio(shutdown, true);
    this.#shell.leave(new VoxdError('E_SHUTTING_DOWN', 'voxd is shutting down'));
    farewell(this.#socket);
  }

  #read(chunk: Buffer): void {
    if (this.#closing) return;
    let events: WyomingEvent[];
    try {
      events = this.#reader.push(chunk);
    } catch (err) {
      const { text, code } = errorOf(err);
      this.#end(new VoxdError('E_INVALID_REQUEST', text), { text, code });
      return;
    }
    for (const event of events) {
      const received = this.#take(event);
      this.#shell.receive(() => this.#handleReceived(received), event.payload?.length ?? 0);
    }
    // Bytes of an event not yet whole: its deadline runs (the idle wait goes on meanwhile).
    if (events.length === 0 || this.#reader.buffered > 0) this.#shell.eventBegun();
  }

  /** Takes an event's payload from the byte budget while it waits in the inbox. */
  #take(event: WyomingEvent): Received {
    const bytes = event.payload?.length ?? 0;
    try {
      this.#shell.bytes.hold(bytes);
      return { event, held: bytes };
    } catch (refused) {
      return { event: { ...event, payload: undefined }, held: 0, refused };
    }
  }

  async #handleReceived({ event, held, refused }: Received): Promise<void> {
    try {
      await this.#handle(event, refused);
    } catch (err) {
      await this.#failed(event.type, err);
    } finally {
      this.#shell.bytes.free(held);
    }
  }

  /** An event failed: a failed audio event ends its exchange (told once, by the exchange's end). */
  async #failed(type: string, err: unknown): Promise<void> {
    const audio = this.#audio;
    if (audio && AUDIO_EVENTS.has(type)) {
      audio.open.abandon(err instanceof Error ? err : new Error(String(err)));
      await audio.told;
      return;
    }
    if (!this.#shell.ended) this.#error(err);
  }

  /** The session ends on voxd's side (a timer, a malformed frame): the client hears why. */
  #end(why: VoxdError, told: { text: string; code: string } = errorOf(why)): void {
    this.#closing = true;
    this.#shell.leave(why);
    farewell(this.#socket, encodeEvent('error', told));
  }

  /**
   * An event or exchange failed: the `error` is the connection's last event, and the connection
   * closes, as the reference servers end theirs (wyoming-piper and wyoming-faster-whisper write the
   * error and drop the connection). Home Assistant reads until a `transcript`, an `audio-stop` or
   * the end of the connection, so an error alone left it waiting for the idle timeout.
   */
  #error(err: unknown): void {
    // A fault of voxd's own, not of the event: logged in full, as a request's would be.
    if (!(err instanceof WyomingError) && describeError(err).internal)
      this.#deps.log.error({ err }, 'wyoming event failed');
    const told = errorOf(err);
    this.#end(err instanceof VoxdError ? err : new VoxdError('E_INVALID_REQUEST', told.text), told);
  }

  async #send(type: string, data: Record<string, unknown> = {}, payload?: Buffer): Promise<void> {
    const socket = this.#socket;
    if (socket.destroyed || !socket.writable) return;
    if (socket.write(encodeEvent(type, data, payload))) return;
    // A client that stops reading holds the engine, not voxd's memory (the caller waits here), and
    // not for longer than the send timeout: then the connection ends and its work is cancelled.
    const ms = this.#deps.config.live_ingest.send_timeout_ms;
    if (await drained(socket, this.#deps.host, ms, this.#shell.signal)) return;
    this.#closing = true;
    this.#shell.leave(
      new VoxdError(
        'E_SEND_TIMEOUT',
        `the Wyoming client read nothing for live_ingest.send_timeout_ms (${ms} ms)`,
      ),
    );
    socket.destroy();
  }

  async #handle(event: WyomingEvent, refused: unknown): Promise<void> {
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
        return this.#audioStart(data);
      case 'audio-chunk':
        return this.#audioChunk(event, refused);
      case 'audio-stop':
        return this.#audioStop();
      case 'synthesize':
        // Within a streamed synthesis it repeats the whole text for servers that do not stream.
        if (this.#streamed) return;
        return this.#speak(data);
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

  async #audioStart(data: Record<string, unknown>): Promise<void> {
    // A new utterance: the one still open is over, unanswered, and its slot freed (docs/wyoming.md).
    await this.#abandonAudio(
      new VoxdError('E_INVALID_REQUEST', 'audio-start: a new utterance began before audio-stop'),
      false,
    );
    // Each chunk carries its own format; the start's is checked so a bad one is refused at once.
    pcmFormat(data);
    const { runtime, config, log } = this.#deps;
    const asked = this.#transcribe;
    const model = await this.#audioModel(asked?.name);
    const entry = runtime.get(model.id);
    const context = {
      runtime,
      config,
      log,
      // The loaded model's rate; before a load, the one every engine here takes (a load that
      // differs is converted again by the runtime).
      rate: entry.audioInput?.sampleRate ?? DEFAULT_INPUT_RATE,
      send: (type: string, d?: Record<string, unknown>, payload?: Buffer) => this.#send(type, d, payload),
    };
    const make =
      model.task === 'vad'
        ? (ctx: ExchangeContext) => new VadExchange(ctx, model.id)
        : (ctx: ExchangeContext) => new AsrExchange(ctx, model.id, asked?.language);
    // A transcription may hold a slot while it waits for audio: it has the live bodies' deadline.
    // A voice activity stream holds none between its probes and has no length limit.
    const total = liveIngestLimits(config.live_ingest, entry.config.live_ingest).total_timeout_ms;
    const deadline: ExchangeDeadline | undefined =
      model.task === 'vad' || total <= 0
        ? undefined
        : {
            ms: total,
            late: () =>
              new VoxdError(
                'E_BODY_TIMEOUT',
                `audio: the utterance did not end within live_ingest.total_timeout_ms (${total} ms) of its audio-start; send audio-stop sooner`,
              ),
          };
    const open = new OpenExchange(this.#shell, context, make, deadline);
    const audio: OpenAudio = { open, told: Promise.resolve(), cancelled: false, quiet: false };
    audio.told = open.ended.then((failure) => this.#audioEnded(audio, failure));
    this.#audio = audio;
    await open.exchange.start?.();
  }

  async #audioChunk(event: WyomingEvent, refused: unknown): Promise<void> {
    const audio = this.#audio;
    if (!audio)
      throw new WyomingError(
        'invalid_event',
        'audio-chunk: no audio-start before it (send transcribe and audio-start first)',
      );
    if (refused !== undefined) throw refused;
    // An exchange already ending (its deadline passed) has its end told; later chunks are dropped.
    if (!event.payload || audio.open.signal.aborted) return;
    const { exchange, signal } = audio.open;
    const format = pcmFormat(event.data);
    // Converting a chunk, or waiting for the model (voice activity's backlog), is voxd's work, not
    // the client's idleness.
    await this.#shell.work(() => raceAbort(exchange.chunk(event.payload!, format), signal));
  }

  async #audioStop(): Promise<void> {
    const audio = this.#audio;
    if (!audio) throw new WyomingError('invalid_event', 'audio-stop: no audio-start before it');
    await audio.open.finish();
    await audio.told;
  }

  /** Abandons the open exchange, if any, and waits until it is over (told `reason` when `tell`). */
  async #abandonAudio(reason: VoxdError, tell: boolean): Promise<void> {
    const audio = this.#audio;
    if (!audio) return;
    audio.cancelled = true;
    audio.quiet = !tell;
    audio.open.abandon(reason);
    await audio.told;
  }

  /** An exchange is over: counted, and its failure told unless the client no longer waits for it. */
  async #audioEnded(audio: OpenAudio, failure: Error | undefined): Promise<void> {
    if (this.#audio === audio) {
      this.#audio = undefined;
      this.#transcribe = undefined;
    }
    const { exchange } = audio.open;
    const outcome =
      failure === undefined ? 'completed' : audio.cancelled || this.#shell.ended ? 'cancelled' : 'failed';
    this.#count(exchange.kind, exchange.model, outcome);
    if (failure !== undefined && !audio.quiet && !this.#shell.ended) this.#error(failure);
  }

  /** Counts an exchange under its model, only when that is a registered model (a made-up name is no label). */
  #count(
    kind: 'asr' | 'tts' | 'vad',
    model: string | undefined,
    outcome: 'completed' | 'failed' | 'cancelled',
  ) {
    if (model !== undefined && this.#deps.runtime.has(model))
      this.#deps.metrics?.exchange('wyoming', kind, model, outcome);
  }

  /** One synthesis as the session's work, counted under the model it ran on. */
  async #speak(data: Record<string, unknown>): Promise<void> {
    let model: string | undefined;
    try {
      await this.#shell.work((signal) =>
        synthesize(
          {
            ...this.#deps,
            signal,
            send: (type, d, payload) => this.#send(type, d, payload),
            chose: (id) => {
              model = id;
            },
          },
          data,
        ),
      );
      this.#count('tts', model, 'completed');
    } catch (err) {
      this.#count('tts', model, this.#shell.ended ? 'cancelled' : 'failed');
      throw err;
    }
  }

  async #synthesizeChunk(data: Record<string, unknown>): Promise<void> {
    const streamed = this.#streamed;
    if (!streamed) throw new WyomingError('invalid_event', 'synthesize-chunk: no synthesize-start before it');
    const text = data['text'];
    if (typeof text !== 'string')
      throw new WyomingError('invalid_event', `synthesize-chunk: text ${showValue(text)} is not text`);
    for (const sentence of streamed.text.push(text))
      await this.#speak({ text: sentence, voice: streamed.voice });
  }

  async #synthesizeStop(): Promise<void> {
    const streamed = this.#streamed;
    this.#streamed = undefined;
    if (!streamed) throw new WyomingError('invalid_event', 'synthesize-stop: no synthesize-start before it');
    const rest = streamed.text.flush();
    if (rest) await this.#speak({ text: rest, voice: streamed.voice });
    await this.#send('synthesize-stopped');
  }
}

function optionalText(data: Record<string, unknown>, key: string): string | undefined {
  const value = data[key];
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string')
    throw new WyomingError('invalid_event', `${key}: ${showValue(value)} is not text`);
  return value;
}

/** The `error` event's fields: the message as voxd words it, and its code. */
function errorOf(err: unknown): { text: string; code: string } {
  if (err instanceof WyomingError) return { text: err.message, code: err.code };
  const { error } = describeError(err);
  return { text: error.message, code: error.code };
}
