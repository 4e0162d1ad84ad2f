/**
 * The turn-taker of a realtime session: each committed buffer (or, under server VAD, each spoken
 * turn) is one turn, transcribed by the session's model through the runtime like any request (the
 * model's FIFO, its busy timeout, management barriers). A session's turns run one after the other
 * in commit order, so a session holds one slot at most and none while it only listens.
 *
 * Bounds (probe 2026-12): at most MAX_WAITING_TURNS turns wait behind the one running (a client's
 * commit past them is refused; under server VAD the next append waits for room instead, so audio
 * sent faster than real time is read at the model's pace and no turn the server found is dropped),
 * and their audio counts against the byte budget until their run is done with it (F5); each turn runs as the
 * session's work (`shell.work`), so the session is not idle while a turn waits for its slot and the
 * memory it leaves is given back once the server is quiet (L4); a live turn has a total deadline,
 * `live_ingest.total_timeout_ms` as an HTTP live body has, and counts as idle while it only waits
 * for the client's audio, so a client that stops sending mid-speech is let go (F1, F14).
 */
import type { Logger } from 'pino';
import { modelEntry, registeredEntry, requireTask } from '../../api/model-lookup.js';
import { transcriptionRequest } from '../../api/transcription/engine-request.js';
import { diarizedSegments, wordLogprobs } from '../../api/transcription/formats.js';
import { type Audio, heldSamples } from '../../audio/types.js';
import { liveIngestLimits } from '../../config/live-ingest-limits.js';
import type { ServerConfig, TaskToken } from '../../config/types.js';
import { invalidRequest, VoxdError } from '../../errors.js';
import type { Metrics } from '../../observability/metrics.js';
import type { InferenceOutcome } from '../../runtime/inference.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { SessionShell } from '../../session/session-shell.js';
import {
  commitEvents,
  errorBody,
  LOGPROBS,
  newId,
  type ServerEvent,
  type SessionSettings,
} from './events.js';
import type { HeldAudio, HeldRange } from './held-audio.js';
import { LiveFeed } from './live-feed.js';

/** Tasks a session's model may have: speech recognition, or diarization (segments with speakers). */
export const TASKS: readonly TaskToken[] = ['asr', 'diar'];

/**
 * Committed turns that may wait behind the one running. Each holds its audio (up to two minutes)
 * until its slot comes; a client committing faster than its model transcribes is told so rather
 * than queueing without end (60 waiting turns were 688 MB from one session).
 */
export const MAX_WAITING_TURNS = 4;

/** One turn: a committed buffer, or (server VAD) the speech from its start to its silence. */
export interface Turn {
  readonly itemId: string;
  readonly model: string | undefined;
  readonly language: string | undefined;
  readonly prompt: string | undefined;
  /** Frames per second of its audio. */
  readonly rate: number;
  /** The whole audio (a commit), or its pieces as they arrive (a live turn, opened at speech start). */
  audio: Audio | LiveFeed;
  /** Frames of the turn's audio so far. */
  frames: number;
  /** What of the session's timeline the turn keeps in memory until its run is done with it. */
  range: HeldRange;
  /** Cancels this turn alone (a clear while its speech goes on). */
  readonly cancel: AbortController;
  /** Resolves when the turn is committed: its transcript is sent only after its committed events. */
  readonly committed: Promise<void>;
  isCommitted: boolean;
  committedAt: number;
  /**
   * Deltas held until the commit, for a turn no event has named before it (a manual buffer heard
   * as it is appended): a client learns of an item from its commit events, as from OpenAI.
   */
  heldDeltas?: string;
}

/** Where a turn's end is counted: the realtime turns metric, or another protocol's own. */
export type TurnMetrics = Pick<Metrics, 'realtimeTurn'>;

export interface TurnContext {
  runtime: Runtime;
  config: ServerConfig;
  log: Logger;
  metrics?: TurnMetrics;
  shell: SessionShell;
  settings: SessionSettings;
  held: HeldAudio;
  send(event: ServerEvent): void;
  /** A live turn passed its deadline while its speech goes on: the input commits it as it is. */
  late(turn: Turn): void;
  /**
   * A turn's run answered, just before its completed event: a protocol that shows more than the
   * text (Deepgram's timed words) reads the engine's result here.
   */
  transcribed?(turn: Turn, outcome: InferenceOutcome): void;
}

export class TurnTaker {
  readonly #ctx: TurnContext;
  /** Turns are transcribed in commit order, one at a time. */
  #chain: Promise<void> = Promise.resolve();
  /** Turns scheduled whose transcription has not started. */
  #waiting = 0;
  #count = 0;
  #lastItem: string | null = null;
  readonly #commits = new WeakMap<Turn, () => void>();
  readonly #ends = new WeakMap<Turn, Promise<void>>();
  /** Appends waiting for a turn to start (server VAD's backpressure). */
  #roomWaiters: (() => void)[] = [];

  constructor(ctx: TurnContext) {
    this.#ctx = ctx;
  }

  /** A turn on the session's current settings. */
  open(audio: Audio | LiveFeed, range: HeldRange, rate: number): Turn {
    const { settings } = this.#ctx;
    let commit!: () => void;
    const committed = new Promise<void>((resolve) => (commit = resolve));
    const turn: Turn = {
      itemId: newId('item'),
      model: settings.model,
      language: settings.language,
      prompt: settings.prompt,
      rate,
      audio,
      frames: audio instanceof LiveFeed ? 0 : heldSamples(audio).length,
      range,
      cancel: new AbortController(),
      committed,
      isCommitted: false,
      committedAt: 0,
    };
    this.#commits.set(turn, commit);
    return turn;
  }

  /** Whether a turn committed now would pass MAX_WAITING_TURNS. */
  get full(): boolean {
    return this.#waiting >= MAX_WAITING_TURNS;
  }

  /**
   * Resolves once a turn committed now would not pass MAX_WAITING_TURNS, or the session has ended
   * (its turns are cancelled, so the chain drains and wakes this).
   */
  async room(): Promise<void> {
    while (this.full && !this.#ctx.shell.ended)
      await new Promise<void>((wake) => this.#roomWaiters.push(wake));
  }

  /** Why a turn past MAX_WAITING_TURNS is refused. */
  refusal(): VoxdError {
    return new VoxdError(
      'E_QUEUE_FULL',
      `input_audio_buffer: ${MAX_WAITING_TURNS} committed turns of this session already wait for their transcription (a session's limit); commit again once a transcript has come`,
      { retryAfterS: 1 },
    );
  }

  /** Resolves once every turn scheduled so far has ended. */
  settled(): Promise<void> {
    return this.#chain;
  }

  /**
   * Queues `turn` behind the session's earlier ones; its audio is held from now until its run is
   * done with it. The caller checked `full`.
   */
  schedule(turn: Turn): void {
    this.#waiting++;
    this.#ctx.held.hold(turn.range);
    // A turn's failures are its own events; anything else must not stop the turns after it.
    const end = this.#chain
      .then(() => this.#take(turn))
      .catch((err: unknown) =>
        this.#ctx.log.error({ err, session: this.#ctx.settings.id }, 'realtime turn failed in voxd'),
      );
    this.#ends.set(turn, end);
    this.#chain = end;
  }

  /** The events of a commit: the turn became an item of the conversation. */
  committed(turn: Turn): void {
    const { itemId } = turn;
    const previous = this.#lastItem;
    this.#lastItem = itemId;
    for (const event of commitEvents(itemId, previous, this.#ctx.settings.beta)) this.#ctx.send(event);
    turn.isCommitted = true;
    turn.committedAt = performance.now();
    if (turn.heldDeltas) this.#delta(turn, turn.heldDeltas);
    turn.heldDeltas = undefined;
    this.#commits.get(turn)?.();
    // A live turn stops waiting for the client here: what is left (the engine finishing its
    // transcript, or its wait for a slot) is the session's work, during which it is not idle.
    const end = this.#ends.get(turn);
    if (end && turn.audio instanceof LiveFeed) void this.#ctx.shell.work(() => end);
  }

  async #take(turn: Turn): Promise<void> {
    this.#waiting--;
    for (const wake of this.#roomWaiters.splice(0)) wake();
    const live = turn.audio instanceof LiveFeed;
    try {
      await this.#ctx.shell.work(
        (signal) => this.#transcribe(turn, signal),
        live ? this.#deadline(turn) : undefined,
        { clientPaced: live },
      );
    } finally {
      this.#ctx.held.release(turn.range);
    }
  }

  /** A live turn's total deadline, as an HTTP live body's (the model's live_ingest wins). */
  #deadline(turn: Turn): { ms: number; late: () => VoxdError } {
    const { runtime, config } = this.#ctx;
    const entry = turn.model === undefined ? undefined : registeredEntry(runtime, turn.model);
    const ms = liveIngestLimits(config.live_ingest, entry?.config.live_ingest).total_timeout_ms;
    return {
      ms,
      late: () => invalidRequest(`live turn: not complete after ${ms} ms (live_ingest.total_timeout_ms)`),
    };
  }

  /** One turn: its transcript as deltas (at least one) and then completed, or failed. */
  async #transcribe(turn: Turn, work: AbortSignal): Promise<void> {
    const { itemId } = turn;
    const n = ++this.#count;
    const { metrics, runtime, shell, log } = this.#ctx;
    let modelId = turn.model ?? '';
    const item = { item_id: itemId, content_index: 0 };
    let sent = '';
    const signal = AbortSignal.any([work, turn.cancel.signal]);
    try {
      if (signal.aborted) return;
      if (turn.model === undefined)
        throw new VoxdError(
          'E_INVALID_REQUEST',
          "no transcription model: name one in the upgrade URL (?model=) or in the session's transcription.model",
          { param: 'session.audio.input.transcription.model' },
        );
      const entry = await modelEntry(runtime, turn.model);
      modelId = entry.id;
      requireTask(entry.config, TASKS, '/v1/realtime');
      const input = turn.audio instanceof LiveFeed ? { liveAudio: turn.audio } : { audio: turn.audio };
      const outcome = await runtime.infer(
        entry.id,
        transcriptionRequest(entry, { language: turn.language, prompt: turn.prompt }, input),
        {
          signal,
          onEvent: (event) => {
            if (event.type !== 'text' || !event.delta) return;
            sent += event.delta;
            if (turn.heldDeltas !== undefined) turn.heldDeltas += event.delta;
            else this.#delta(turn, event.delta);
          },
        },
      );
      if (!(await this.#untilCommitted(turn))) return;
      // A diarizer's speaker turns, as OpenAI's diarizing models send them, before the transcript.
      for (const segment of diarizedSegments(outcome))
        this.#ctx.send({ type: 'conversation.item.input_audio_transcription.segment', ...item, ...segment });
      this.#ctx.transcribed?.(turn, outcome);
      const transcript = outcome.result.text ?? sent;
      // Engines that answer whole still give the client its delta before the completed event.
      if (transcript.startsWith(sent) && transcript.length > sent.length)
        this.#delta(turn, transcript.slice(sent.length));
      const audioSeconds = turn.frames / turn.rate;
      this.#ctx.send({
        type: 'conversation.item.input_audio_transcription.completed',
        ...item,
        transcript,
        ...(this.#ctx.settings.include.includes(LOGPROBS) ? { logprobs: wordLogprobs(outcome) ?? null } : {}),
        usage: { type: 'duration', seconds: Math.ceil(audioSeconds) },
      });
      const ms = performance.now() - turn.committedAt;
      metrics?.realtimeTurn(entry.id, 'completed', ms / 1000);
      log.info(
        { session: this.#ctx.settings.id, turn: n, model: entry.id, audio_s: audioSeconds, ms },
        `realtime turn ${n} completed ${ms.toFixed(1)} ms after its commit`,
      );
    } catch (err) {
      if (turn.audio instanceof LiveFeed) turn.audio.fail(err);
      // Only registered models are labels (an unknown name is no label value a client can add).
      const labelled = modelId !== '' && runtime.has(modelId);
      if (shell.signal.aborted || turn.cancel.signal.aborted) {
        if (labelled) metrics?.realtimeTurn(modelId, 'cancelled');
        return;
      }
      // The turn's own deadline: its speech is committed as it is, and the turn fails with it.
      const error = work.aborted ? work.reason : err;
      if (work.aborted) this.#ctx.late(turn);
      if (labelled) metrics?.realtimeTurn(modelId, 'failed');
      // A live turn that failed before its speech ended (no slot in time) says so at its commit.
      if (!(await this.#untilCommitted(turn))) return;
      this.#ctx.send({
        type: 'conversation.item.input_audio_transcription.failed',
        ...item,
        error: errorBody(error),
      });
      log.info({ session: this.#ctx.settings.id, turn: n, err: error }, `realtime turn ${n} failed`);
    }
  }

  #delta(turn: Turn, delta: string): void {
    this.#ctx.send({
      type: 'conversation.item.input_audio_transcription.delta',
      item_id: turn.itemId,
      content_index: 0,
      delta,
    });
  }

  /** Waits for the turn's commit; false when the session ends first (nothing more is sent). */
  #untilCommitted(turn: Turn): Promise<boolean> {
    const gone = this.#ctx.shell.signal;
    if (turn.isCommitted) return Promise.resolve(true);
    if (gone.aborted) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const onGone = () => resolve(false);
      gone.addEventListener('abort', onGone, { once: true });
      void turn.committed.then(() => {
        gone.removeEventListener('abort', onGone);
        resolve(true);
      });
    });
  }
}
