/**
 * One `/v1/speak` session on its WebSocket (Deepgram's streaming TTS): `Speak` text is cut into
 * pieces as it arrives (text-cutter.ts), each piece spoken as soon as it is whole (speaker.ts),
 * `Flush` speaks the rest and answers `Flushed` after the last audio, `Clear` stops at once and
 * answers `Cleared`, `Close` halts at once (what is in progress cancelled, its slot freed) and
 * closes 1000, as Deepgram documents it.
 *
 * Messages come through the session shell (src/session/) in arrival order. None of them waits for
 * speech, so a Clear is handled as soon as it arrives, not behind the audio it stops. What a client
 * can make voxd hold is bounded: the text not yet spoken (max_input_chars: past it a Warning and the
 * fragment is dropped), the audio sent and not read (a client that stops reading for
 * live_ingest.send_timeout_ms is let go), the session's idle time (deepgram_idle_timeout_ms: a
 * session speaking is not idle) and its life (deepgram_max_session_ms).
 */
import type { WebSocket } from 'ws';
import type { EngineRequest } from '../../../engines/types.js';
import { describeError, VoxdError } from '../../../errors.js';
import { keepAlive } from '../../../session/keepalive.js';
import { SessionShell } from '../../../session/session-shell.js';
import type { Timer } from '../../../util/clock.js';
import { type DeepgramDeps, type DeepgramSession, deepgramShellOptions } from '../upgrade.js';
import type { SpeakFormat } from './format.js';
import {
  BadMessage,
  type ClientMessage,
  metadata,
  parseMessage,
  type WarningCode,
  warning,
} from './messages.js';
import { Speaker } from './speaker.js';
import { TextCutter } from './text-cutter.js';

/** Messages received and not yet handled before the socket is paused (each is handled at once). */
const INBOX_EVENTS = 64;
/** Bytes of messages waiting before the socket is paused. */
const INBOX_BYTES = 1 << 20;
/** Audio goes out in frames of at most this many bytes, so a Clear stops it between two. */
export const FRAME_BYTES = 8192;
/** Audio sent and not yet written to the socket past which a send waits for the client to read. */
export const SEND_HIGH_WATER = 64 << 10;
/**
 * Messages (Warnings, Flushed) waiting unwritten past which the client is taken not to read: a
 * client that sends bad messages and reads none of the Warnings cannot grow voxd's memory.
 */
export const UNREAD_MESSAGES_BYTES = 1 << 20;
/** Flushes waiting for their audio past which another is refused with a Warning. */
export const MAX_PENDING_FLUSHES = 64;
/** The most text held unspoken when the model and server set no max_input_chars. */
const UNLIMITED_TEXT_CAP = 1_000_000;

/** A Flush whose Flushed is not sent yet: when it came, and the characters of its segment (0: empty). */
interface PendingFlush {
  at: number;
  chars: number;
}

export interface SpeakPlan {
  /** The model's id, and the name the client asked for (echoed in Metadata). */
  model: string;
  modelName: string;
  request: EngineRequest;
  format: SpeakFormat;
  /** Text held unspoken, at most (max_input_chars). */
  maxChars: number;
}

export class SpeakSession implements DeepgramSession {
  readonly id: string;
  readonly #ws: WebSocket;
  readonly #deps: DeepgramDeps;
  readonly #plan: SpeakPlan;
  readonly #shell: SessionShell;
  readonly #cutter: TextCutter;
  readonly #speaker: Speaker;
  readonly #keepalive: Timer;
  /** The next Flush's sequence id (Deepgram counts flushes from 0). */
  #sequence = 0;
  /** Characters taken since the last Flush or Clear: the open segment's (for its exchange metric). */
  #segmentChars = 0;
  /** Flushes whose Flushed is not sent yet, in order: each is counted and logged when it is sent. */
  #pending: PendingFlush[] = [];
  /** Bytes of unspoken text (held and queued) on the server's byte budget. */
  #textBytes = 0;
  /** The shutdown finishing: later messages are not taken. */
  #finishing: Promise<void> | undefined;

  constructor(ws: WebSocket, deps: DeepgramDeps, plan: SpeakPlan) {
    this.#ws = ws;
    this.#deps = deps;
    this.#plan = plan;
    const { config } = deps;
    const meta = metadata(plan.modelName, plan.model);
    this.id = meta.request_id;
    this.#shell = new SessionShell(deps.host, {
      what: 'Deepgram speak session',
      protocol: 'deepgram_speak',
      inboxEvents: INBOX_EVENTS,
      inboxBytes: INBOX_BYTES,
      ...deepgramShellOptions(config, ws),
      // Deepgram's NET-0001: nothing received within the timeout.
      expire: (why) =>
        this.#close(1011, why.code === 'E_SESSION_IDLE' ? 'NET-0001' : 'session too long', why),
    });
    this.#cutter = new TextCutter(plan.maxChars);
    this.#speaker = new Speaker({
      runtime: deps.runtime,
      shell: this.#shell,
      model: plan.model,
      request: plan.request,
      format: plan.format,
      sendAudio: (bytes, current) => this.#sendAudio(bytes, current),
      dequeued: () => this.#settleText(),
      flushed: (sequenceId) => this.#flushed(sequenceId),
      failed: (err) => this.#failed(err),
    });
    this.#keepalive = keepAlive(ws, deps.host.clock);
    ws.on('message', (data, binary) => this.#arrived(data as Buffer, binary));
    ws.on('close', () => this.#leave(new VoxdError('E_CLIENT_GONE', 'the client closed the session')));
    this.#sendJson(meta);
  }

  /**
   * The shutdown: the audio of the text already cut is finished, the rest dropped, then 1001 (a
   * Close already finishing is joined, and closes with its 1000).
   */
  shutdown(): Promise<void> {
    return this.#finish(1001, 'shutting down');
  }

  #arrived(data: Buffer, binary: boolean): void {
    this.#shell.arrived(
      data.length,
      () => this.#receive(data, binary),
      (err) => this.#warn('BUFFER_FULL', describeError(err).error.message),
    );
  }

  #receive(data: Buffer, binary: boolean): void {
    if (this.#finishing) return;
    // Refused before the parse: no Speak within the text bound is this long (6 bytes a character
    // written as \uXXXX), and a parse of the longest frame would hold the event loop.
    const cap = this.#plan.maxChars > 0 ? this.#plan.maxChars : UNLIMITED_TEXT_CAP;
    if (!binary && data.length > 6 * cap + 1024) {
      this.#warn(
        'TEXT_TOO_LONG',
        `a message of ${data.length} bytes holds more text than max_input_chars=${cap}; it was dropped`,
      );
      return;
    }
    let message: ClientMessage;
    try {
      if (binary) throw new BadMessage('binary frames are not messages: send each message as JSON text');
      message = parseMessage(data);
    } catch (err) {
      if (!(err instanceof BadMessage)) throw err;
      this.#warn('INVALID_MESSAGE', err.message);
      return;
    }
    switch (message.type) {
      case 'Speak':
        this.#speak(message.text);
        return;
      case 'Flush':
        this.#flush();
        return;
      case 'Clear':
        this.#clear();
        return;
      case 'Close':
        // Deepgram's Close halts processing and closes at once; a shutdown finishes what is cut.
        this.#clear(false);
        this.#close(1000, 'Close');
        return;
      case 'KeepAlive':
        return;
    }
  }

  #speak(text: string): void {
    if (text === '') return;
    const cap = this.#plan.maxChars > 0 ? this.#plan.maxChars : UNLIMITED_TEXT_CAP;
    // Text waiting to be spoken, and this: a single fragment too long is the cutter's to refuse.
    if (this.#speaker.queuedChars > 0 && this.#speaker.queuedChars + text.length > cap) {
      this.#warn(
        'BUFFER_FULL',
        `${this.#speaker.queuedChars} characters are waiting to be spoken and ${text.length} more would pass max_input_chars=${cap}; this text was dropped: wait for audio (Flush, then Flushed) before sending more`,
      );
      return;
    }
    // The text is held on the server's byte budget until it is spoken or dropped.
    try {
      this.#shell.bytes.hold(text.length * 2);
      this.#textBytes += text.length * 2;
    } catch (err) {
      this.#warn('BUFFER_FULL', `${describeError(err).error.message}; this text was dropped`);
      return;
    }
    let pieces: string[];
    try {
      pieces = this.#cutter.push(text);
    } catch (err) {
      this.#warn('TEXT_TOO_LONG', `${describeError(err).error.message}; the text held was dropped`);
      this.#settleText();
      return;
    }
    this.#segmentChars += text.length;
    for (const piece of pieces) this.#speaker.speak(piece);
    this.#settleText();
  }

  /** Gives back the budget of text no longer held (spoken, trimmed away, or dropped). */
  #settleText(): void {
    const held = (this.#cutter.heldLength + this.#speaker.queuedChars) * 2;
    if (held >= this.#textBytes) return;
    this.#shell.bytes.free(this.#textBytes - held);
    this.#textBytes = held;
  }

  #flush(): void {
    if (this.#pending.length >= MAX_PENDING_FLUSHES) {
      this.#warn(
        'BUFFER_FULL',
        `${MAX_PENDING_FLUSHES} Flushes wait for their audio; this one was not taken (the text stays held): wait for Flushed`,
      );
      return;
    }
    const rest = this.#cutter.flush();
    if (rest !== undefined) this.#speaker.speak(rest);
    // Pending before the speaker hears of it: with nothing to speak it answers Flushed at once.
    this.#pending.push({ at: performance.now(), chars: this.#segmentChars });
    this.#segmentChars = 0;
    this.#speaker.flush(this.#sequence++);
    this.#settleText();
  }

  /** A Flush's audio is all sent: its segment is done. An empty Flush counts no exchange. */
  #flushed(sequenceId: number): void {
    this.#sendJson({ type: 'Flushed', sequence_id: sequenceId });
    const flush = this.#pending.shift();
    if (!flush || flush.chars === 0) return;
    this.#count('completed');
    const ms = performance.now() - flush.at;
    this.#deps.log.info(
      {
        session: this.id,
        protocol: 'deepgram_speak',
        model: this.#plan.model,
        sequence_id: sequenceId,
        chars: flush.chars,
        ms,
      },
      `/v1/speak segment ${sequenceId} spoken ${ms.toFixed(1)} ms after its Flush`,
    );
  }

  /** Drops the text held and queued and cancels the piece in progress; `answer`: a Clear's Cleared. */
  #clear(answer = true): void {
    this.#cutter.clear();
    this.#speaker.clear();
    this.#settleText();
    this.#dropSegments('cancelled');
    if (answer) this.#sendJson({ type: 'Cleared', sequence_id: this.#sequence });
  }

  /** The shutdown: the pieces already cut are spoken, the text held dropped, then the close. */
  #finish(code: number, reason: string): Promise<void> {
    if (this.#shell.ended) return Promise.resolve();
    this.#finishing ??= (async () => {
      this.#cutter.clear();
      this.#settleText();
      await this.#speaker.idle();
      this.#close(code, reason);
    })();
    return this.#finishing;
  }

  #failed(err: unknown): void {
    const described = describeError(err);
    if (described.internal) this.#deps.log.error({ err, session: this.id }, 'speak synthesis failed');
    this.#dropSegments('failed');
    const code = err instanceof VoxdError ? err.code : 'E_ENGINE';
    // A piece still queued when the server began to shut down is refused: that is the shutdown's 1001.
    const shutdown = code === 'E_SHUTTING_DOWN';
    this.#close(
      shutdown ? 1001 : 1011,
      shutdown ? 'shutting down' : 'synthesis failed',
      new VoxdError(code, `the synthesis failed: ${described.error.message}`),
    );
  }

  /** Ends the session now with a close frame (`why`: the shell's reason, told first as a Warning). */
  #close(code: number, reason: string, why?: VoxdError): void {
    if (this.#shell.ended) return;
    if (why && code !== 1000) this.#warn('SESSION_ENDING', why.message);
    this.#leave(
      why ??
        (code === 1001
          ? new VoxdError('E_SHUTTING_DOWN', 'voxd is shutting down')
          : new VoxdError('E_CLIENT_GONE', 'the client sent Close')),
    );
    if (this.#ws.readyState === this.#ws.OPEN) this.#ws.close(code, reason);
  }

  #leave(why: VoxdError): void {
    if (this.#shell.ended) return;
    this.#keepalive.cancel();
    this.#dropSegments('cancelled');
    this.#speaker.clear();
    this.#shell.leave(why);
  }

  /** The segments flushed and not answered, and the one open, end without their audio. */
  #dropSegments(outcome: 'failed' | 'cancelled'): void {
    const segments =
      this.#pending.filter((flush) => flush.chars > 0).length + (this.#segmentChars > 0 ? 1 : 0);
    this.#pending = [];
    this.#segmentChars = 0;
    for (let i = 0; i < segments; i++) this.#count(outcome);
  }

  #count(outcome: 'completed' | 'failed' | 'cancelled'): void {
    this.#deps.metrics?.exchange('deepgram_speak', 'tts', this.#plan.model, outcome);
  }

  #warn(code: WarningCode, description: string): void {
    this.#sendJson(warning(code, description));
  }

  #sendJson(message: object): void {
    const ws = this.#ws;
    if (ws.readyState !== ws.OPEN) return;
    if (ws.bufferedAmount > UNREAD_MESSAGES_BYTES + SEND_HIGH_WATER) {
      this.#notReading(`${UNREAD_MESSAGES_BYTES} bytes of messages unread`);
      return;
    }
    ws.send(JSON.stringify(message));
  }

  /**
   * Sends audio in frames; past SEND_HIGH_WATER unwritten, waits until the socket took the frame.
   * A client that reads nothing for live_ingest.send_timeout_ms is let go, and its run cancelled.
   */
  async #sendAudio(bytes: Buffer, current: () => boolean): Promise<void> {
    const ws = this.#ws;
    for (let at = 0; at < bytes.length && current(); at += FRAME_BYTES) {
      if (ws.readyState !== ws.OPEN) return;
      const frame = bytes.subarray(at, at + FRAME_BYTES);
      if (ws.bufferedAmount + frame.length <= SEND_HIGH_WATER) ws.send(frame);
      else if (!(await this.#written(frame))) return;
    }
  }

  /** Sends `frame` and waits until it is written; false when the client read nothing in time. */
  #written(frame: Buffer): Promise<boolean> {
    const { host, config } = this.#deps;
    const ms = config.live_ingest.send_timeout_ms;
    const signal = this.#shell.signal;
    return new Promise<boolean>((resolve) => {
      let timer: Timer | undefined;
      const done = (ok: boolean) => {
        timer?.cancel();
        signal.removeEventListener('abort', onAbort);
        resolve(ok);
      };
      const onAbort = () => done(false);
      signal.addEventListener('abort', onAbort, { once: true });
      timer =
        ms > 0
          ? host.clock.after(ms, () => {
              done(false);
              this.#notReading(`no audio for live_ingest.send_timeout_ms (${ms} ms)`);
            })
          : undefined;
      this.#ws.send(frame, () => done(true));
    });
  }

  #notReading(what: string): void {
    if (this.#shell.ended) return;
    this.#leave(new VoxdError('E_SEND_TIMEOUT', `the client read ${what}`));
    // The close frame would wait behind the audio the client does not read.
    this.#ws.terminate();
  }
}
