/**
 * One realtime transcription session on a WebSocket (OpenAI's Realtime API, transcription
 * intent): the session's settings, its input audio buffer and its turns. A committed buffer is one
 * turn, transcribed by the session's model through the runtime like any request (the model's FIFO,
 * its busy timeout, management barriers); turns of a session run one after the other, so a session
 * holds at most one slot, and none while it only listens. Every failure of an event is an `error`
 * event and the session goes on; a turn that fails is a `...transcription.failed` event.
 */

import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { WebSocket } from 'ws';
import { modelEntry, registeredEntry, requireTask } from '../../api/model-lookup.js';
import { diarizedSegments, wordLogprobs } from '../../api/transcription/formats.js';
import { vadProbe } from '../../api/vad/probe.js';
import { SampleBuffer } from '../../api/vad/sample-buffer.js';
import { SpeechDetector } from '../../api/vad/speech-detector.js';
import { requireVadModel } from '../../api/vad/vad-model.js';
import { isPaddedBase64Of } from '../../audio/base64.js';
import type { Audio } from '../../audio/types.js';
import type { ServerConfig, TaskToken } from '../../config/types.js';
import { showValue, VoxdError } from '../../errors.js';
import type { Metrics } from '../../observability/metrics.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { Timer } from '../../util/clock.js';
import { parseJsonText } from '../../util/json-text.js';
import { PushQueue } from '../../util/push-queue.js';
import { toHttp } from '../transport/errors.js';
import {
  bytesPerSample,
  DEFAULT_FORMAT,
  decodeSamples,
  GA_TYPES,
  gaFormat,
  type InputFormat,
} from './audio-format.js';
import { CLIENT_EVENTS, type ClientEvent, type TurnDetectionField } from './client-events.js';
import { type ServerVad, shownTurnDetection, turnDetection } from './turn-detection.js';

/** Tasks a session's model may have: speech recognition, or diarization (segments with speakers). */
const TASKS: readonly TaskToken[] = ['asr', 'diar'];

/** What a session may send before the client reads: past it the client is not reading (1008). */
export const SEND_BUFFER_BYTES = 4 << 20;

/** How often a session pings its client; one left unanswered by the next ping ends the session. */
export const KEEPALIVE_MS = 30_000;

/**
 * The longest turn a session buffers, whatever max_audio_seconds allows (3 hours by default): its
 * samples are held until the commit, and 256 sessions of 3 hours would be terabytes. Two minutes
 * of 24 kHz audio is 11 MiB; a client dictating longer commits as it goes.
 */
export const BUFFER_SECONDS = 120;

/** The `include` entry that asks for the words' log-probabilities on `.completed`. */
const LOGPROBS = 'item.input_audio_transcription.logprobs';

/** Events received and not yet handled before the socket is paused. */
const INBOX_EVENTS = 16;

type ErrorBody = { type: string; code: string; message: string; param: string | null };

/** Where a session's fields sit in each shape, for an error's `param`. */
interface FieldPaths {
  format: string;
  model: string;
  turnDetection: string;
}
const GA_PARAMS: FieldPaths = {
  format: 'session.audio.input.format',
  model: 'session.audio.input.transcription.model',
  turnDetection: 'session.audio.input.turn_detection',
};
const BETA_PARAMS: FieldPaths = {
  format: 'session.input_audio_format',
  model: 'session.input_audio_transcription.model',
  turnDetection: 'session.turn_detection',
};

export interface SessionDeps {
  runtime: Runtime;
  config: ServerConfig;
  log: Logger;
  /** The model the upgrade URL named (`?model=`), the session's until an update names another. */
  model: string | undefined;
  /** The server's metrics (turns by outcome, commit-to-transcript time); absent outside a server. */
  metrics?: Metrics;
}

/** Ids' random part, drawn once per process: a counter after it makes each id unique. */
const ID_STEM = randomBytes(6).toString('base64url');
let nextId = 0;
/**
 * A session, item or event id: unique in the process and, through the stem, across processes and
 * restarts. Not a secret (a client sees only its own session's), so no crypto call per id (1.7 µs
 * each, against 0.03 for the counter), as request ids (observability/request-id.ts).
 */
const id = (prefix: string) => `${prefix}_${ID_STEM}${(nextId++).toString(36)}`;

/** One turn: a committed buffer, or (server VAD) the speech from its start to its silence. */
interface Turn {
  itemId: string;
  model: string | undefined;
  language: string | undefined;
  prompt: string | undefined;
  /** The whole audio (a commit), or its pieces as they arrive (a live turn, opened at speech start). */
  audio: Audio | PushQueue<Audio>;
  /** Frames of the turn's audio so far. */
  frames: number;
  /** Cancels this turn alone (a clear while its speech goes on). */
  cancel: AbortController;
  /** Resolves when the turn is committed: its transcript is sent only after its committed events. */
  committed: Promise<void>;
  commit(): void;
  committedAt: number;
}

export class RealtimeSession {
  readonly id = id('sess');
  readonly #ws: WebSocket;
  readonly #deps: SessionDeps;
  /** Aborted when the client goes: the turn in progress is cancelled and its slot freed. */
  readonly #gone = new AbortController();
  #format: InputFormat = DEFAULT_FORMAT;
  #model: string | undefined;
  #language: string | undefined;
  #prompt: string | undefined;
  #include: string[] = [];
  /** Whether the client speaks the beta shape (`transcription_session.*`, `conversation.item.created`). */
  #beta = false;
  readonly #buffer = new SampleBuffer();
  /** The odd byte of a pcm16 append, waiting for its pair in the next one. */
  #carry: number | undefined;
  #lastItem: string | null = null;
  /** Server VAD: its settings and detector; undefined when the client commits. */
  #vad: ServerVad | undefined;
  #detector: SpeechDetector | undefined;
  /**
   * Server VAD: the turn whose speech goes on, where its audio starts in the buffer and, for a live
   * turn, how far its audio has been handed to the engine (what the detector has examined).
   */
  #open: { turn: Turn; start: number; sentTo: number } | undefined;
  /** Events are handled in arrival order, one at a time (an update checks its model first). */
  #inbox: Promise<void> = Promise.resolve();
  #waiting = 0;
  /** Turns are transcribed in commit order, one at a time. */
  #turns: Promise<void> = Promise.resolve();
  #turnCount = 0;

  /** The idle, lifetime and keepalive timers, cancelled when the session closes. */
  readonly #timers: Timer[] = [];
  #idle: Timer | undefined;
  #running = 0;
  #pongDue = false;

  constructor(ws: WebSocket, deps: SessionDeps) {
    this.#ws = ws;
    this.#deps = deps;
    this.#model = deps.model;
    this.#startTimers();
    ws.on('message', (data, binary) => {
      this.#armIdle();
      // Events wait in line while one is handled (an update resolving its model): past a few, the
      // socket is paused, so a client cannot queue events faster than they are handled.
      if (++this.#waiting >= INBOX_EVENTS) ws.pause();
      this.#inbox = this.#inbox.then(async () => {
        await this.#receive(data as Buffer, binary);
        if (--this.#waiting < INBOX_EVENTS && ws.isPaused) ws.resume();
      });
    });
    ws.on('close', () => {
      for (const timer of [...this.#timers, this.#idle]) timer?.cancel();
      this.#detector?.stop();
      this.#gone.abort(new VoxdError('E_CLIENT_GONE', 'the client closed the session'));
    });
    ws.on('pong', () => {
      this.#pongDue = false;
    });
    this.#send({ type: 'session.created', session: this.#gaSession() });
  }

  /** Resolves once every turn committed so far has ended. */
  settled(): Promise<void> {
    return this.#inbox.then(() => this.#turns);
  }

  /** The shutdown: turns in progress end (bounded by the runtime's deadline), then 1001. */
  shutdown(): Promise<void> {
    // Speech still going on is committed as it is: its turn is transcribed before the close.
    this.#detector?.stop();
    if (this.#open) this.#commitOpen();
    return this.#end(1001, {
      type: 'server_error',
      code: 'shutting_down',
      message: 'voxd is shutting down; reconnect to another instance',
      param: null,
    });
  }

  /** Ends the session once its turns have: a last error event saying why, then the close. */
  async #end(code: number, why: ErrorBody): Promise<void> {
    await this.settled();
    this.#sendError(why);
    this.#ws.close(code, why.code);
  }

  #startTimers(): void {
    const { clock } = this.#deps.runtime;
    const { realtime_max_session_ms: lifetime } = this.#deps.config;
    if (lifetime > 0)
      this.#timers.push(
        clock.after(lifetime, () => {
          void this.#end(1000, {
            type: 'invalid_request_error',
            code: 'session_expired',
            message: `the session reached realtime_max_session_ms (${lifetime} ms); open a new one`,
            param: null,
          });
        }),
      );
    // A peer that stopped answering pings is gone, whatever its TCP connection says.
    this.#timers.push(
      clock.every(KEEPALIVE_MS, () => {
        if (this.#pongDue) {
          this.#ws.terminate();
          return;
        }
        this.#pongDue = true;
        this.#ws.ping();
      }),
    );
    this.#armIdle();
  }

  /** (Re)starts the idle timer: the client's every event, and the end of each turn, restart it. */
  #armIdle(): void {
    const ms = this.#deps.config.realtime_idle_timeout_ms;
    // A turn cancelled by the client's leaving ends after the close: nothing to time then.
    if (ms <= 0 || this.#gone.signal.aborted) return;
    this.#idle?.cancel();
    this.#idle = this.#deps.runtime.clock.after(ms, () => {
      if (this.#running > 0) return this.#armIdle();
      void this.#end(1000, {
        type: 'invalid_request_error',
        code: 'session_idle_timeout',
        message: `the client sent no event for realtime_idle_timeout_ms (${ms} ms)`,
        param: null,
      });
    });
  }

  get signal(): AbortSignal {
    return this.#gone.signal;
  }

  async #receive(data: Buffer, binary: boolean): Promise<void> {
    let clientEventId: string | undefined;
    try {
      if (binary)
        throw new VoxdError(
          'E_INVALID_REQUEST',
          'binary frames are not events: send each event as JSON text',
        );
      const raw = parseJsonText(data.toString('utf8'), 'event');
      if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
        throw new VoxdError(
          'E_INVALID_REQUEST',
          `event: ${showValue(raw)} is invalid; expected a JSON object`,
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
      await this.#handle(check(fields));
    } catch (err) {
      const mapped = toHttp(err);
      // A fault of voxd's own, not of the event: logged in full, as a request's would be.
      if (mapped.internal) this.#deps.log.error({ err, session: this.id }, 'realtime event failed');
      this.#sendError((mapped.body as { error: ErrorBody }).error, clientEventId);
    }
  }

  async #handle(event: ClientEvent): Promise<void> {
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
        this.#send({ type: 'session.updated', session: this.#gaSession() });
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
        if (!this.#beta) this.#send({ type: 'transcription_session.created', session: this.#betaSession() });
        this.#beta = true;
        this.#send({ type: 'transcription_session.updated', session: this.#betaSession() });
        return;
      }
      case 'input_audio_buffer.append':
        return this.#append(event.audio);
      case 'input_audio_buffer.commit':
        return this.#commit();
      case 'input_audio_buffer.clear':
        this.#clear();
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
    const vad =
      update.turnDetection === undefined
        ? this.#vad
        : update.turnDetection === null
          ? undefined
          : turnDetection(update.turnDetection);
    if (vad) requireVadModel(this.#deps.runtime, this.#deps.config, params.turnDetection);
    const model = transcription?.model ?? undefined;
    if (model !== undefined) await this.#checkModel(model, params.model);
    const newFormat = update.format !== undefined && !sameFormat(update.format, this.#format);
    // Under server VAD the buffer holds only the detector's context until speech starts.
    const buffered =
      this.#open !== undefined || (!this.#vad && (this.#buffer.length > 0 || this.#carry !== undefined));
    if (newFormat && buffered)
      throw new VoxdError(
        'E_INVALID_REQUEST',
        'format: the buffer holds audio in the current format; commit or clear it before changing the format',
        { param: params.format },
      );
    if (update.format) this.#format = update.format;
    if (model !== undefined) this.#model = model;
    if (transcription && 'language' in transcription) this.#language = transcription.language ?? undefined;
    if (transcription && 'prompt' in transcription) this.#prompt = transcription.prompt ?? undefined;
    if (update.include) this.#include = update.include;
    if (update.turnDetection !== undefined || newFormat) this.#detect(vad);
  }

  /** Turns server VAD on (afresh, from the audio that comes next) or off; speech going on is committed. */
  #detect(vad: ServerVad | undefined): void {
    if (this.#open) this.#commitOpen();
    this.#detector?.stop();
    this.#detector = undefined;
    this.#vad = vad;
    this.#buffer.clear();
    this.#carry = undefined;
    if (!vad) return;
    const rate = this.#format.rate;
    const vadId = this.#deps.config.chunking_vad_model;
    this.#detector = new SpeechDetector(
      this.#buffer,
      rate,
      vad,
      vadProbe(this.#deps.runtime, vadId, rate, this.#gone.signal),
      {
        started: (position) => this.#speechStarted(position),
        examined: (to) => this.#feedOpen(to),
        stopped: (position, to) => this.#speechStopped(position, to),
        idle: (from, to) => this.#idleTimeout(from, to),
        failed: (err) => {
          const error = errorBody(err);
          this.#sendError({ ...error, message: `server VAD: ${error.message}` });
        },
      },
      // A turn is cut before the buffer's limit would refuse its audio.
      this.#limitSeconds() * 0.9,
    );
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

  /** The longest turn the buffer takes, in seconds. */
  #limitSeconds(): number {
    const configured = this.#deps.config.max_audio_seconds;
    return configured > 0 ? Math.min(configured, BUFFER_SECONDS) : BUFFER_SECONDS;
  }

  /** Frames of the turn being gathered: the buffer (manual commit), or the open turn (server VAD). */
  #turnFrames(): number {
    if (!this.#vad) return this.#buffer.length;
    return this.#open ? this.#buffer.end - this.#open.start : 0;
  }

  #append(audio: string): void {
    const decoded = Buffer.from(audio, 'base64');
    if (!isPaddedBase64Of(audio, decoded))
      throw new VoxdError('E_INVALID_REQUEST', `audio: ${showValue(audio.slice(0, 40))} is not base64`, {
        param: 'audio',
      });
    const { encoding, rate } = this.#format;
    const bytes = this.#carry === undefined ? decoded : Buffer.concat([Buffer.of(this.#carry), decoded]);
    const whole = bytes.length - (bytes.length % bytesPerSample(encoding));
    const limit = this.#limitSeconds();
    if ((this.#turnFrames() + whole / bytesPerSample(encoding)) / rate > limit)
      throw new VoxdError(
        'E_AUDIO_TOO_LONG',
        `input_audio_buffer: the buffer would hold more than ${limit} s of audio (${limit === this.#deps.config.max_audio_seconds ? 'max_audio_seconds' : "a realtime turn's limit"}); commit or clear it`,
        { param: 'audio' },
      );
    // The refused append above left the buffer as it was; this one's odd byte waits for the next.
    this.#carry = whole < bytes.length ? bytes[whole] : undefined;
    const samples = decodeSamples(bytes.subarray(0, whole), encoding);
    if (samples.length === 0) return;
    this.#buffer.append(samples);
    const detector = this.#detector;
    if (!detector) return;
    detector.update();
    // Until speech starts the buffer keeps only what the detector and the prefix padding need; a
    // live turn, what its engine has not had yet.
    const open = this.#open;
    let keep = detector.oldestNeeded;
    if (open) keep = open.turn.audio instanceof PushQueue ? Math.min(keep, open.sentTo) : open.start;
    this.#buffer.dropBefore(keep);
  }

  #clear(): void {
    if (this.#open) {
      const { turn } = this.#open;
      this.#open = undefined;
      turn.cancel.abort(
        new VoxdError('E_CLIENT_GONE', 'the client cleared the buffer while the turn was spoken'),
      );
    }
    this.#buffer.clear();
    this.#carry = undefined;
    this.#detector?.reset();
  }

  #ms(position: number): number {
    return Math.round((position * 1000) / this.#format.rate);
  }

  #newTurn(audio: Audio | PushQueue<Audio>, frames: number): Turn {
    let commit!: () => void;
    const committed = new Promise<void>((resolve) => (commit = resolve));
    const turn: Turn = {
      itemId: id('item'),
      model: this.#model,
      language: this.#language,
      prompt: this.#prompt,
      audio,
      frames,
      cancel: new AbortController(),
      committed,
      commit: () => {
        turn.committedAt = performance.now();
        commit();
      },
      committedAt: 0,
    };
    return turn;
  }

  #speechStarted(position: number): void {
    const prefix = Math.round((this.#vad!.prefixPaddingMs * this.#format.rate) / 1000);
    const start = Math.max(this.#buffer.start, position - prefix);
    const model = this.#model === undefined ? undefined : registeredEntry(this.#deps.runtime, this.#model);
    // A streaming engine hears the turn as it is spoken (what the detector has examined of it):
    // its slot is taken now, in the model's FIFO.
    const turn = model?.family.liveInput
      ? this.#newTurn(new PushQueue<Audio>(), 0)
      : this.#newTurn({ samples: new Float32Array(0), sampleRate: this.#format.rate, channels: 1 }, 0);
    this.#open = { turn, start, sentTo: start };
    this.#send({
      type: 'input_audio_buffer.speech_started',
      audio_start_ms: this.#ms(start),
      item_id: turn.itemId,
    });
    if (turn.audio instanceof PushQueue) this.#schedule(turn);
  }

  /** Hands a live turn's engine its audio up to `to`. */
  #feedOpen(to: number): void {
    const open = this.#open;
    if (!open || !(open.turn.audio instanceof PushQueue) || to <= open.sentTo) return;
    const samples = this.#buffer.slice(open.sentTo, to);
    open.sentTo = to;
    open.turn.frames += samples.length;
    open.turn.audio.push({ samples, sampleRate: this.#format.rate, channels: 1 });
  }

  #speechStopped(position: number, to: number): void {
    const open = this.#open;
    if (!open) return;
    this.#send({
      type: 'input_audio_buffer.speech_stopped',
      audio_end_ms: this.#ms(position),
      item_id: open.turn.itemId,
    });
    this.#commitOpen(to);
  }

  /** idle_timeout_ms passed without speech: the quiet audio is committed as a turn of its own. */
  #idleTimeout(from: number, to: number): void {
    const samples = this.#buffer.slice(from, to);
    const turn = this.#newTurn({ samples, sampleRate: this.#format.rate, channels: 1 }, samples.length);
    this.#send({
      type: 'input_audio_buffer.timeout_triggered',
      audio_start_ms: this.#ms(from),
      audio_end_ms: this.#ms(to),
      item_id: turn.itemId,
    });
    this.#committed(turn);
    this.#schedule(turn);
  }

  /** Commits the open turn with its audio up to `to` (its silence window included). */
  #commitOpen(to = this.#buffer.end): void {
    this.#feedOpen(to);
    const { turn, start } = this.#open!;
    this.#open = undefined;
    if (turn.audio instanceof PushQueue) {
      turn.audio.end();
      this.#committed(turn);
      return;
    }
    const samples = this.#buffer.slice(start, to);
    turn.audio = { samples, sampleRate: this.#format.rate, channels: 1 };
    turn.frames = samples.length;
    this.#committed(turn);
    this.#schedule(turn);
  }

  #commit(): void {
    if (this.#open) {
      this.#commitOpen();
      return;
    }
    if (this.#buffer.length === 0) {
      this.#sendError({
        type: 'invalid_request_error',
        code: 'input_audio_buffer_commit_empty',
        message: 'input_audio_buffer: the buffer is empty; append audio before committing',
        param: null,
      });
      return;
    }
    const samples = this.#buffer.slice(this.#buffer.start);
    this.#buffer.clear();
    this.#carry = undefined;
    this.#detector?.reset();
    const turn = this.#newTurn({ samples, sampleRate: this.#format.rate, channels: 1 }, samples.length);
    this.#committed(turn);
    this.#schedule(turn);
  }

  /** The events of a commit: the buffer became an item of the conversation. */
  #committed(turn: Turn): void {
    const { itemId } = turn;
    const previous = this.#lastItem;
    this.#lastItem = itemId;
    this.#send({ type: 'input_audio_buffer.committed', item_id: itemId, previous_item_id: previous });
    const item = {
      id: itemId,
      object: 'realtime.item',
      type: 'message',
      status: 'completed',
      role: 'user',
      content: [{ type: 'input_audio', transcript: null }],
    };
    if (this.#beta) this.#send({ type: 'conversation.item.created', previous_item_id: previous, item });
    else {
      this.#send({ type: 'conversation.item.added', previous_item_id: previous, item });
      this.#send({ type: 'conversation.item.done', previous_item_id: previous, item });
    }
    turn.commit();
  }

  /** Queues a turn behind the session's earlier ones: a session holds one slot at most. */
  #schedule(turn: Turn): void {
    this.#running++;
    this.#turns = this.#turns
      .then(() => this.#transcribe(turn))
      .finally(() => {
        this.#running--;
        this.#armIdle();
      });
  }

  /** One turn: its transcript as deltas (at least one) and then completed, or failed. */
  async #transcribe(turn: Turn): Promise<void> {
    const { itemId } = turn;
    const n = ++this.#turnCount;
    const { metrics } = this.#deps;
    let modelId = turn.model ?? '';
    const item = { item_id: itemId, content_index: 0 };
    let sent = '';
    const signal = AbortSignal.any([this.#gone.signal, turn.cancel.signal]);
    try {
      if (signal.aborted) return;
      if (turn.model === undefined)
        throw new VoxdError(
          'E_INVALID_REQUEST',
          "no transcription model: name one in the upgrade URL (?model=) or in the session's transcription.model",
          { param: 'session.audio.input.transcription.model' },
        );
      const { runtime } = this.#deps;
      const entry = await modelEntry(runtime, turn.model);
      modelId = entry.id;
      requireTask(entry.config, TASKS, '/v1/realtime');
      const options = {
        ...entry.config.default_request_options,
        ...(turn.language ? { language: turn.language } : {}),
      };
      const input = turn.audio instanceof PushQueue ? { liveAudio: turn.audio } : { audio: turn.audio };
      const outcome = await runtime.infer(
        entry.id,
        { task: entry.config.task, ...input, text: turn.prompt, language: turn.language, options },
        {
          signal,
          onEvent: (event) => {
            if (event.type !== 'text' || !event.delta) return;
            sent += event.delta;
            this.#send({
              type: 'conversation.item.input_audio_transcription.delta',
              ...item,
              delta: event.delta,
            });
          },
        },
      );
      await turn.committed;
      // A diarizer's speaker turns, as OpenAI's diarizing models send them, before the transcript.
      for (const segment of diarizedSegments(outcome))
        this.#send({ type: 'conversation.item.input_audio_transcription.segment', ...item, ...segment });
      const transcript = outcome.result.text ?? sent;
      // Engines that answer whole still give the client its delta before the completed event.
      if (transcript.startsWith(sent) && transcript.length > sent.length)
        this.#send({
          type: 'conversation.item.input_audio_transcription.delta',
          ...item,
          delta: transcript.slice(sent.length),
        });
      const audioSeconds = turn.frames / this.#format.rate;
      this.#send({
        type: 'conversation.item.input_audio_transcription.completed',
        ...item,
        transcript,
        ...(this.#include.includes(LOGPROBS) ? { logprobs: wordLogprobs(outcome) ?? null } : {}),
        usage: { type: 'duration', seconds: Math.ceil(audioSeconds) },
      });
      const ms = performance.now() - turn.committedAt;
      metrics?.realtimeTurn(entry.id, 'completed', ms / 1000);
      this.#deps.log.info(
        { session: this.id, turn: n, model: entry.id, audio_s: audioSeconds, ms },
        `realtime turn ${n} completed ${ms.toFixed(1)} ms after its commit`,
      );
    } catch (err) {
      if (turn.audio instanceof PushQueue) turn.audio.fail(err);
      // Only registered models are labels (an unknown name is no label value a client can add).
      const labelled = modelId !== '' && this.#deps.runtime.has(modelId);
      if (signal.aborted) {
        if (labelled) metrics?.realtimeTurn(modelId, 'cancelled');
        return;
      }
      if (labelled) metrics?.realtimeTurn(modelId, 'failed');
      // A live turn that failed before its speech ended (no slot in time) says so at its commit.
      await turn.committed;
      this.#send({
        type: 'conversation.item.input_audio_transcription.failed',
        ...item,
        error: errorBody(err),
      });
      this.#deps.log.info({ session: this.id, turn: n, err }, `realtime turn ${n} failed`);
    }
  }

  #gaSession() {
    return {
      type: 'transcription',
      id: this.id,
      object: 'realtime.transcription_session',
      audio: {
        input: {
          format: gaFormat(this.#format),
          transcription: {
            model: this.#model ?? null,
            language: this.#language ?? null,
            prompt: this.#prompt ?? '',
          },
          turn_detection: shownTurnDetection(this.#vad),
          noise_reduction: null,
        },
      },
      include: this.#include,
    };
  }

  #betaSession() {
    const { encoding } = this.#format;
    return {
      id: this.id,
      object: 'realtime.transcription_session',
      input_audio_format: encoding,
      input_audio_transcription: {
        model: this.#model ?? null,
        language: this.#language ?? null,
        prompt: this.#prompt ?? '',
      },
      turn_detection: shownTurnDetection(this.#vad),
      input_audio_noise_reduction: null,
      include: this.#include,
    };
  }

  #sendError(error: ErrorBody, clientEventId?: string): void {
    this.#send({ type: 'error', error: { ...error, event_id: clientEventId ?? null } });
  }

  #send(event: Record<string, unknown>): void {
    const ws = this.#ws;
    if (ws.readyState !== ws.OPEN) return;
    // A client that does not read cannot make voxd hold its events without bound.
    if (ws.bufferedAmount > SEND_BUFFER_BYTES) {
      ws.close(1008, 'the client is not reading its events');
      return;
    }
    ws.send(JSON.stringify({ event_id: id('event'), ...event }));
  }
}

/** The error object of an error event: the HTTP error body's, as the catalogue maps it. */
function errorBody(err: unknown): ErrorBody {
  const { error } = toHttp(err).body as { error: ErrorBody };
  return error;
}

function formatOf(type: keyof typeof GA_TYPES, rate: number | null | undefined): InputFormat {
  const encoding = GA_TYPES[type]!;
  if (encoding === 'pcm16') return { encoding, rate: rate ?? 24000 };
  if (rate != null && rate !== 8000)
    throw new VoxdError(
      'E_INVALID_REQUEST',
      `session.audio.input.format.rate: ${rate} is invalid; ${type} is 8000 Hz`,
      { param: 'session.audio.input.format.rate' },
    );
  return { encoding, rate: 8000 };
}

const sameFormat = (a: InputFormat, b: InputFormat) => a.encoding === b.encoding && a.rate === b.rate;
