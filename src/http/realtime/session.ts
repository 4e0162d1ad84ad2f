/**
 * One realtime transcription session on a WebSocket (OpenAI's Realtime API, transcription
 * intent): the socket side. Events come in through the session shell (src/session/), which handles
 * them one at a time in arrival order, pauses the socket behind them, times the session out (idle,
 * whole life) and aborts everything the session waits on when it ends. The input buffer
 * (input-buffer.ts) holds the audio and finds turns; the turn-taker (turns.ts) transcribes them;
 * events.ts has the shapes. Every failure of an event is an `error` event and the session goes on;
 * a turn that fails is a `...transcription.failed` event.
 */
import type { Logger } from 'pino';
import type { WebSocket } from 'ws';
import { modelEntry, requireTask } from '../../api/model-lookup.js';
import { requireVadModel } from '../../api/vad/vad-model.js';
import type { ServerConfig } from '../../config/types.js';
import { describeError, showValue, VoxdError } from '../../errors.js';
import type { Metrics } from '../../observability/metrics.js';
import type { Runtime } from '../../runtime/runtime.js';
import { keepAlive } from '../../session/keepalive.js';
import type { SessionHost } from '../../session/session-host.js';
import { SessionShell } from '../../session/session-shell.js';
import type { Timer } from '../../util/clock.js';
import { keepPlain, type LiftedLiteral, readJson, takeLifted } from '../../util/json-reader.js';
import type { InputFormat } from './audio-format.js';
import { CLIENT_EVENTS, type ClientEvent, type TurnDetectionField } from './client-events.js';
import type { SessionStart } from './client-secrets.js';
import {
  BETA_PARAMS,
  type ErrorBody,
  errorBody,
  type FieldPaths,
  formatOf,
  GA_PARAMS,
  newId,
  type ServerEvent,
  SessionSettings,
  sameFormat,
} from './events.js';
import { HeldAudio } from './held-audio.js';
import { InputBuffer } from './input-buffer.js';
import { turnDetection } from './turn-detection.js';
import { TASKS, TurnTaker } from './turns.js';

/** What a session may send before the client reads: past it the client is not reading (1008). */
export const SEND_BUFFER_BYTES = 4 << 20;

/** Events received and not yet handled before the socket is paused. */
const INBOX_EVENTS = 16;

/**
 * Bytes of events received and not yet handled before the socket is paused: sixteen events of up
 * to 21 MiB each would otherwise wait in memory. They count against the byte budget until handled.
 */
export const INBOX_BYTES = 4 << 20;

export interface SessionDeps {
  runtime: Runtime;
  config: ServerConfig;
  log: Logger;
  /** What every session of the server shares: the byte budget, the clock, the memory release. */
  host: SessionHost;
  /** The model the upgrade URL named (`?model=`), the session's until an update names another. */
  model: string | undefined;
  /** The server's metrics (turns by outcome, commit-to-transcript time); absent outside a server. */
  metrics?: Metrics;
  /** A beta transcription session (upgrade.ts betaTranscription): it opens in the beta shape. */
  beta?: boolean;
  /** The settings an ephemeral key was minted with: the session starts from them. */
  start?: SessionStart;
}

export class RealtimeSession {
  readonly #ws: WebSocket;
  readonly #deps: SessionDeps;
  readonly #settings: SessionSettings;
  readonly #shell: SessionShell;
  readonly #turns: TurnTaker;
  readonly #input: InputBuffer;
  readonly #keepalive: Timer;

  constructor(ws: WebSocket, deps: SessionDeps) {
    this.#ws = ws;
    this.#deps = deps;
    const { config, runtime } = deps;
    this.#settings = new SessionSettings(deps.model);
    const { start } = deps;
    if (start) {
      const settings = this.#settings;
      settings.format = start.format;
      settings.language = start.language;
      settings.prompt = start.prompt;
      settings.include = [...start.include];
      settings.beta = start.beta;
    }
    this.#shell = new SessionShell(deps.host, {
      what: 'realtime session',
      protocol: 'realtime',
      inboxEvents: INBOX_EVENTS,
      inboxBytes: INBOX_BYTES,
      idleMs: config.realtime_idle_timeout_ms,
      idleSetting: 'realtime_idle_timeout_ms',
      lifetimeMs: config.realtime_max_session_ms,
      lifetimeSetting: 'realtime_max_session_ms',
      pause: () => ws.pause(),
      resume: () => ws.resume(),
      expire: (why) => this.#close(1000, why),
    });
    const send = (event: ServerEvent) => this.#send(event);
    const held = new HeldAudio(this.#shell.bytes);
    this.#turns = new TurnTaker({
      runtime,
      config,
      log: deps.log,
      metrics: deps.metrics,
      shell: this.#shell,
      settings: this.#settings,
      held,
      send,
      late: (turn) => this.#input.late(turn),
    });
    this.#input = new InputBuffer({
      runtime,
      config,
      shell: this.#shell,
      settings: this.#settings,
      turns: this.#turns,
      held,
      send,
      sendError: (error) => this.#sendError(error),
    });
    // Server VAD the key was minted with; its model was checked then, and is checked again here.
    let refused: ErrorBody | undefined;
    if (start?.vad) {
      try {
        this.#input.detect(start.vad);
        this.#settings.vad = start.vad;
      } catch (err) {
        refused = errorBody(err);
      }
    }
    this.#keepalive = keepAlive(ws, deps.host.clock);
    ws.on('message', (data, binary) => this.#arrived(data as Buffer, binary));
    ws.on('close', () => this.#leave(new VoxdError('E_CLIENT_GONE', 'the client closed the session')));
    if (deps.beta || this.#settings.beta) {
      this.#settings.beta = true;
      this.#send({ type: 'transcription_session.created', session: this.#settings.betaShape() });
    } else this.#send({ type: 'session.created', session: this.#settings.ga() });
    if (refused) this.#sendError({ ...refused, message: `the key's turn_detection: ${refused.message}` });
  }

  get id(): string {
    return this.#settings.id;
  }

  /** Resolves once every event received so far has been handled and every turn committed has ended. */
  settled(): Promise<void> {
    return this.#shell.settled().then(() => this.#turns.settled());
  }

  /** The shutdown: speech going on is committed, turns end (within the runtime's deadline), then 1001. */
  async shutdown(): Promise<void> {
    this.#input.commitSpeech();
    await this.settled();
    this.#close(
      1001,
      new VoxdError('E_SHUTTING_DOWN', 'voxd is shutting down; reconnect to another instance'),
    );
  }

  /**
   * Ends the session now (a timer, or the shutdown once its turns are done): a turn still in progress
   * is cancelled and its slot freed at once, the client gets an error event saying why, then the close.
   */
  #close(code: number, why: VoxdError): void {
    if (this.#shell.ended) return;
    this.#leave(why);
    const error = errorBody(why);
    this.#sendError(error);
    this.#ws.close(code, error.code);
  }

  /** Everything the session holds or waits on goes: timers, turns, detection, its share of the budget. */
  #leave(why: VoxdError): void {
    this.#keepalive.cancel();
    this.#shell.leave(why);
    this.#input.end(why);
  }

  /**
   * One event arrived: it waits in the shell's inbox (which pauses the socket past INBOX_EVENTS or
   * INBOX_BYTES waiting) with its bytes on the budget, refused in its turn when they do not fit.
   */
  #arrived(data: Buffer, binary: boolean): void {
    this.#shell.arrived(
      data.length,
      () => this.#receive(data, binary),
      (err) => this.#sendError(errorBody(err)),
    );
  }

  async #receive(data: Buffer, binary: boolean): Promise<void> {
    let clientEventId: string | undefined;
    try {
      if (binary)
        throw new VoxdError(
          'E_INVALID_REQUEST',
          'binary frames are not events: send each event as JSON text',
        );
      // An append's long audio stays bytes, decoded in slices (json-reader.ts).
      const { value: raw } = await readJson(data, { field: 'event', keep: keepPlain('audio') });
      if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
        throw new VoxdError(
          'E_INVALID_REQUEST',
          `event: ${showValue(raw)} is invalid; expected a JSON object`,
          { param: 'event' },
        );
      const fields = raw as Record<string, unknown>;
      if (typeof fields['event_id'] === 'string') clientEventId = fields['event_id'];
      const type = fields['type'];
      // Own keys only: "constructor" or "__proto__" is not an event, and a non-string is no key.
      const check =
        typeof type === 'string' && Object.hasOwn(CLIENT_EVENTS, type)
          ? CLIENT_EVENTS[type as ClientEvent['type']]
          : undefined;
      if (!check)
        throw new VoxdError(
          'E_INVALID_REQUEST',
          `type: ${showValue(fields['type'])} is not an event voxd takes; expected one of: ${Object.keys(CLIENT_EVENTS).join(', ')}`,
          { param: 'type' },
        );
      await this.#handle(check(fields), takeLifted(fields, 'audio'));
    } catch (err) {
      const described = describeError(err);
      // A fault of voxd's own, not of the event: logged in full, as a request's would be.
      if (described.internal) this.#deps.log.error({ err, session: this.id }, 'realtime event failed');
      this.#sendError(described.error as ErrorBody, clientEventId);
    }
  }

  /** `audio`: an append's audio when it was long enough to be kept as bytes. */
  async #handle(event: ClientEvent, audio: LiftedLiteral | undefined): Promise<void> {
    switch (event.type) {
      case 'session.update': {
        const input = event.session.audio?.input;
        await this.#update({
          format: input?.format ? formatOf(input.format.type, input.format.rate) : undefined,
          transcription: input?.transcription,
          turnDetection: input?.turn_detection,
          include: event.session.include,
          params: GA_PARAMS,
        });
        this.#send({ type: 'session.updated', session: this.#settings.ga() });
        return;
      }
      case 'transcription_session.update': {
        const { session } = event;
        await this.#update({
          format: session.input_audio_format
            ? {
                encoding: session.input_audio_format,
                rate: session.input_audio_format === 'pcm16' ? 24000 : 8000,
              }
            : undefined,
          transcription: session.input_audio_transcription,
          turnDetection: session.turn_detection,
          include: session.include,
          params: BETA_PARAMS,
        });
        const settings = this.#settings;
        if (!settings.beta)
          this.#send({ type: 'transcription_session.created', session: settings.betaShape() });
        settings.beta = true;
        this.#send({ type: 'transcription_session.updated', session: settings.betaShape() });
        return;
      }
      case 'input_audio_buffer.append':
        return this.#input.append(audio ?? event.audio);
      case 'input_audio_buffer.commit':
        return this.#input.commit();
      case 'input_audio_buffer.clear':
        this.#input.clear();
        this.#send({ type: 'input_audio_buffer.cleared' });
        return;
    }
  }

  /** Checks a whole update before any of it applies, so a refused update changes nothing. */
  async #update(update: {
    format: InputFormat | undefined;
    transcription:
      | { model?: string | null; language?: string | null; prompt?: string | null }
      | null
      | undefined;
    turnDetection: TurnDetectionField | undefined;
    include: string[] | null | undefined;
    /** Where the fields sit in this shape, for `param`. */
    params: FieldPaths;
  }): Promise<void> {
    const { transcription, params } = update;
    const settings = this.#settings;
    const vad =
      update.turnDetection === undefined
        ? settings.vad
        : update.turnDetection === null
          ? undefined
          : turnDetection(update.turnDetection);
    if (vad) requireVadModel(this.#deps.runtime, this.#deps.config, params.turnDetection);
    const model = transcription?.model ?? undefined;
    if (model !== undefined) await this.#checkModel(model, params.model);
    const newFormat = update.format !== undefined && !sameFormat(update.format, settings.format);
    if (newFormat && this.#input.holdsAudio)
      throw new VoxdError(
        'E_INVALID_REQUEST',
        'format: the buffer holds audio in the current format; commit or clear it before changing the format',
        { param: params.format },
      );
    if (update.format) settings.format = update.format;
    if (model !== undefined) settings.model = model;
    if (transcription && 'language' in transcription) settings.language = transcription.language ?? undefined;
    if (transcription && 'prompt' in transcription) settings.prompt = transcription.prompt ?? undefined;
    if (update.include) settings.include = update.include;
    if (update.turnDetection !== undefined || newFormat) {
      settings.vad = vad;
      this.#input.detect(vad);
    }
  }

  async #checkModel(name: string, param: string): Promise<void> {
    try {
      const entry = await modelEntry(this.#deps.runtime, name);
      requireTask(entry.config, TASKS, '/v1/realtime');
    } catch (err) {
      if (err instanceof VoxdError) throw new VoxdError(err.code, err.message, { param });
      throw err;
    }
  }

  #sendError(error: ErrorBody, clientEventId?: string): void {
    this.#send({ type: 'error', error: { ...error, event_id: clientEventId ?? null } });
  }

  #send(event: ServerEvent): void {
    const ws = this.#ws;
    if (ws.readyState !== ws.OPEN) return;
    // A client that does not read cannot make voxd hold its events without bound.
    if (ws.bufferedAmount > SEND_BUFFER_BYTES) {
      ws.close(1008, 'the client is not reading its events');
      return;
    }
    ws.send(JSON.stringify({ event_id: newId('event'), ...event }));
  }
}
