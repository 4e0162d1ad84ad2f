/**
 * One `/v1/listen` session: Deepgram's live transcription on the session shell. Binary frames are
 * audio (raw in the query's encoding and rate, or a WAV stream: wav-stream.ts); text frames are
 * `KeepAlive`, `Finalize` and `CloseStream`. The audio goes into the realtime API's input buffer
 * under server VAD (src/http/realtime/input-buffer.ts), whose utterances the turn-taker
 * (turns.ts) transcribes one at a time through the model's FIFO with a streaming engine hearing
 * each as it is spoken: a session holds one slot at most, and none while it hears only silence.
 * transcripts.ts turns their events into Deepgram's messages.
 *
 * Ends: `CloseStream` (or an empty binary frame, Deepgram's older form of it) finishes what is
 * buffered, sends the last Results and Metadata, closes 1000; the shutdown does the same with
 * 1001. Errors close as Deepgram does, with its code and payload: bad input 1008 `DATA-0000`, no
 * audio and no KeepAlive for `deepgram_idle_timeout_ms` 1011 `NET-0001`, anything else 1011
 * `NET-0000` (the payload says what, cut to a close frame's 123 bytes).
 */
import { createHash, type Hash } from 'node:crypto';
import type { WebSocket } from 'ws';
import { describeError, type ErrorCode, showValue, VoxdError } from '../../../errors.js';
import type { ModelEntry } from '../../../runtime/model-entry.js';
import { keepAlive } from '../../../session/keepalive.js';
import { SessionShell } from '../../../session/session-shell.js';
import type { Timer } from '../../../util/clock.js';
import { bytesPerSample, type Encoding } from '../../realtime/audio-format.js';
import { type ErrorBody, errorBody, SessionSettings } from '../../realtime/events.js';
import { HeldAudio } from '../../realtime/held-audio.js';
import { InputBuffer } from '../../realtime/input-buffer.js';
import { INBOX_BYTES, SEND_BUFFER_BYTES } from '../../realtime/session.js';
import type { ServerVad } from '../../realtime/turn-detection.js';
import { TurnTaker } from '../../realtime/turns.js';
import { type DeepgramDeps, type DeepgramSession, deepgramShellOptions } from '../upgrade.js';
import { metadataMessage, type SessionFacts, sessionFacts } from './messages.js';
import type { ListenOptions } from './options.js';
import { Transcripts } from './transcripts.js';
import { WavStream } from './wav-stream.js';

/** Messages received and not yet handled before the socket is paused. */
const INBOX_EVENTS = 32;

/** The client's text messages. */
const MESSAGES = ['KeepAlive', 'Finalize', 'CloseStream'];

/** The close reason of a session the shutdown ends (1001). */
const SHUTDOWN_REASON = 'voxd is shutting down; reconnect to another instance';

/** The longest payload of a close frame, in bytes. */
const CLOSE_REASON_BYTES = 123;

export class ListenSession implements DeepgramSession {
  readonly #ws: WebSocket;
  readonly #deps: DeepgramDeps;
  readonly #options: ListenOptions;
  readonly #shell: SessionShell;
  readonly #settings: SessionSettings;
  readonly #held: HeldAudio;
  readonly #turns: TurnTaker;
  readonly #transcripts: Transcripts;
  readonly #facts: SessionFacts;
  readonly #keepalive: Timer;
  readonly #hash: Hash = createHash('sha256');
  #input: InputBuffer | undefined;
  /** Set while the stream's WAV header is still to come (no `encoding`). */
  #wav: WavStream | undefined;
  /** Audio bytes heard (a WAV header not counted), and how many make a millisecond. */
  #heardBytes = 0;
  #bytesPerMs = 1;
  /** The stream is ending (CloseStream, the shutdown): audio after it is not heard. */
  #ending = false;

  constructor(ws: WebSocket, deps: DeepgramDeps, options: ListenOptions, entry: ModelEntry) {
    this.#ws = ws;
    this.#deps = deps;
    this.#options = options;
    const { config, runtime, metrics } = deps;
    this.#facts = sessionFacts(entry, options.channels);
    this.#shell = new SessionShell(deps.host, {
      what: 'Deepgram listen session',
      protocol: 'deepgram_listen',
      inboxEvents: INBOX_EVENTS,
      inboxBytes: INBOX_BYTES,
      ...deepgramShellOptions(config, ws),
      expire: (why) => this.#fail(errorBody(why), why.code),
    });
    this.#settings = new SessionSettings(entry.id);
    this.#settings.vad = serverVad(options);
    this.#held = new HeldAudio(this.#shell.bytes);
    this.#transcripts = new Transcripts({
      facts: this.#facts,
      options,
      send: (message) => this.#send(message),
      heardMs: () => this.#heardBytes / this.#bytesPerMs,
      fail: (error) => this.#fail(error),
    });
    this.#turns = new TurnTaker({
      runtime,
      config,
      log: deps.log,
      metrics: {
        realtimeTurn: (model, outcome) => metrics?.exchange('deepgram_listen', 'asr', model, outcome),
      },
      shell: this.#shell,
      settings: this.#settings,
      held: this.#held,
      send: (event) => this.#transcripts.event(event),
      late: (turn) => this.#input?.late(turn),
      transcribed: (turn, outcome) => this.#transcripts.transcribed(turn.itemId, outcome),
    });
    if (options.encoding) this.#start(options.encoding, options.sampleRate);
    else this.#wav = new WavStream();
    this.#keepalive = keepAlive(ws, deps.host.clock);
    ws.on('message', (data, binary) => this.#arrived(data as Buffer, binary));
    ws.on('close', () => this.#leave(new VoxdError('E_CLIENT_GONE', 'the client closed the session')));
  }

  get id(): string {
    return this.#facts.requestId;
  }

  /**
   * The shutdown: speech going on is transcribed as it is, its final sent, then Metadata and 1001.
   * An engine that hears an utterance only once it ends cannot take it now (the runtime takes no
   * new work): that speech is dropped, and Metadata and 1001 come all the same.
   */
  async shutdown(): Promise<void> {
    if (this.#shell.ended) return;
    this.#ending = true;
    await this.#transcripts.ending('end', () => this.#input?.commitSpeech());
    await this.#shell.settled();
    await this.#turns.settled();
    this.#finish(1001, SHUTDOWN_REASON);
  }

  /** The audio's format is known: the input buffer starts, with server VAD on. */
  #start(encoding: Encoding, rate: number): void {
    this.#settings.format = { encoding, rate };
    this.#bytesPerMs = (bytesPerSample(encoding) * this.#options.channels * rate) / 1000;
    const { runtime, config } = this.#deps;
    this.#input = new InputBuffer({
      runtime,
      config,
      shell: this.#shell,
      settings: this.#settings,
      turns: this.#turns,
      held: this.#held,
      send: (event) => this.#transcripts.event(event),
      sendError: (error) => this.#fail(error),
    });
    this.#input.detect(this.#settings.vad);
  }

  /** One message arrived: it waits in the shell's inbox with its bytes on the budget. */
  #arrived(data: Buffer, binary: boolean): void {
    this.#shell.arrived(
      data.length,
      () => this.#receive(data, binary),
      (err) => this.#fail(errorBody(err)),
    );
  }

  async #receive(data: Buffer, binary: boolean): Promise<void> {
    try {
      if (binary) {
        // Deepgram's older clients end the stream with an empty frame.
        if (data.length === 0) return await this.#closeStream();
        return await this.#audio(data);
      }
      switch (messageType(data)) {
        case 'KeepAlive':
          return;
        case 'Finalize':
          return this.#finalize();
        case 'CloseStream':
          return await this.#closeStream();
      }
    } catch (err) {
      const described = describeError(err);
      if (described.internal) this.#deps.log.error({ err, session: this.id }, 'listen message failed');
      this.#fail(described.error as ErrorBody);
    }
  }

  async #audio(data: Buffer): Promise<void> {
    if (this.#ending) return;
    let bytes = data;
    if (this.#wav) {
      const start = this.#wav.push(data);
      if (!start) return;
      this.#wav = undefined;
      this.#start('pcm16', start.sampleRate);
      bytes = start.data;
    }
    this.#hash.update(bytes);
    this.#heardBytes += bytes.length;
    await this.#input!.append(bytes);
    this.#transcripts.checkUtteranceEnd();
  }

  /** Finalize: the utterance going on ends now; with none, an empty final says so once earlier ones are sent. */
  async #finalize(): Promise<void> {
    const input = this.#input;
    const ended = input ? await this.#transcripts.ending('finalize', () => input.endSpeech()) : false;
    if (ended) return;
    void this.#turns.settled().then(() => {
      if (!this.#shell.ended) this.#transcripts.nothingToFinalize();
    });
  }

  /** CloseStream: what is buffered is transcribed, its finals sent, then Metadata and 1000. */
  async #closeStream(): Promise<void> {
    if (this.#ending) return;
    this.#ending = true;
    const input = this.#input;
    await this.#shell.work(async () => {
      if (input) await this.#transcripts.ending('end', () => input.finish());
      await this.#turns.settled();
    });
    this.#finish(1000, '');
  }

  /** The session's normal end: Metadata, then the close. */
  #finish(code: 1000 | 1001, reason: string): void {
    if (this.#shell.ended) return;
    this.#send(metadataMessage(this.#facts, this.#heardBytes / this.#bytesPerMs, this.#hash.digest('hex')));
    this.#ws.close(code, reason);
    this.#leave(
      code === 1001
        ? new VoxdError('E_SHUTTING_DOWN', reason)
        : new VoxdError('E_CLIENT_GONE', 'the client closed the stream'),
    );
  }

  /** The session ends on an error: Deepgram's close code and payload, and everything held goes. */
  #fail(error: ErrorBody, code?: ErrorCode): void {
    if (this.#shell.ended) return;
    // The shutdown refused an utterance (speech going on that an engine not hearing it live could
    // only transcribe once it ended): the session ends as the shutdown ends it, not as a fault.
    if (error.code === 'shutting_down') {
      this.#finish(1001, SHUTDOWN_REASON);
      return;
    }
    const [status, payload] =
      code === 'E_SESSION_IDLE'
        ? [1011, 'NET-0001']
        : code === undefined && error.type === 'invalid_request_error'
          ? [1008, 'DATA-0000']
          : [1011, 'NET-0000'];
    this.#deps.log.info(
      { session: this.id, error },
      `listen session ${this.id} ends: ${payload} ${error.message}`,
    );
    this.#leave(new VoxdError(code ?? 'E_INVALID_REQUEST', error.message));
    this.#ws.close(status, closeReason(`${payload} ${error.message}`));
  }

  #leave(why: VoxdError): void {
    this.#keepalive.cancel();
    this.#shell.leave(why);
    this.#input?.end(why);
  }

  #send(message: Record<string, unknown>): void {
    const ws = this.#ws;
    if (ws.readyState !== ws.OPEN) return;
    // A client that does not read cannot make voxd hold its messages without bound.
    if (ws.bufferedAmount > SEND_BUFFER_BYTES) {
      const why = new VoxdError('E_SEND_TIMEOUT', 'the client is not reading its messages');
      this.#fail(errorBody(why), why.code);
      return;
    }
    ws.send(JSON.stringify(message));
  }
}

/** Server VAD as the query sets it: `endpointing` is its silence window (options.ts floors it). */
function serverVad(options: ListenOptions): ServerVad {
  return {
    type: 'server_vad',
    threshold: 0.5,
    prefixPaddingMs: 300,
    silenceDurationMs: options.silenceMs,
    idleTimeoutMs: 0,
  };
}

/** The longest text message taken: Deepgram's are a few bytes; a longer one is refused unparsed. */
const MAX_MESSAGE_BYTES = 4096;

/** A text message's type; a VoxdError (bad input) for anything else. */
function messageType(data: Buffer): string {
  if (data.length > MAX_MESSAGE_BYTES)
    throw new VoxdError(
      'E_INVALID_REQUEST',
      `message: a text frame of ${data.length} bytes is no Deepgram message (at most ${MAX_MESSAGE_BYTES}); send audio as binary frames`,
      { param: 'type' },
    );
  let message: unknown;
  try {
    message = JSON.parse(data.toString('utf8'));
  } catch {
    throw new VoxdError(
      'E_INVALID_REQUEST',
      `message: ${showValue(data.toString('utf8', 0, 40))} is not JSON`,
      {
        param: 'type',
      },
    );
  }
  const type = (message as { type?: unknown } | null)?.type;
  if (typeof type !== 'string' || !MESSAGES.includes(type))
    throw new VoxdError(
      'E_INVALID_REQUEST',
      `type: ${showValue(type ?? null)} is not a message voxd takes; expected ${MESSAGES.join(', ')}`,
      { param: 'type' },
    );
  return type;
}

/** `text` cut to what a close frame carries (whole UTF-8 characters). */
function closeReason(text: string): string {
  let out = text;
  while (Buffer.byteLength(out) > CLOSE_REASON_BYTES) out = out.slice(0, -1);
  return out;
}
