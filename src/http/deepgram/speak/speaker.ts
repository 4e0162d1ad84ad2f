/**
 * The synthesis side of one `/v1/speak` session: the pieces its text was cut into, spoken one at a
 * time in order, each a normal `runtime.infer` through the model's FIFO, so the session holds one
 * slot at most and none while it only waits for text. A piece's audio goes out as the engine
 * makes it. A Flush's `Flushed` waits in the same queue, so it follows the last audio before it.
 *
 * `clear` (Deepgram's `Clear`, a barge-in) drops what is queued and aborts the piece being made:
 * its run is cancelled and its slot freed at once, and no byte of it is sent afterwards (each send
 * checks that its piece still belongs to the current epoch).
 */
import type { Audio } from '../../../audio/types.js';
import type { EngineRequest } from '../../../engines/types.js';
import { VoxdError } from '../../../errors.js';
import type { Runtime } from '../../../runtime/runtime.js';
import type { SessionShell } from '../../../session/session-shell.js';
import { relayAudio, SpeakAudio } from './audio-out.js';
import type { SpeakFormat } from './format.js';

/** Times a piece lost with a shared runner is spoken again before its session fails. */
const RESTART_RETRIES = 2;

/** Something to do, in order: speak a piece of text, or say a flush is done. */
type Item = { text: string } | { flushed: number };

export interface SpeakerDeps {
  runtime: Runtime;
  shell: SessionShell;
  model: string;
  /** The request every piece is made from (voice, options); its text is the piece. */
  request: EngineRequest;
  format: SpeakFormat;
  /** Sends audio bytes; resolves once the client may be sent more. */
  sendAudio(bytes: Buffer, current: () => boolean): Promise<void>;
  /** A piece left the queue to be spoken (or the queue was dropped): less text is held. */
  dequeued(): void;
  /** A flush's audio is all sent. */
  flushed(sequenceId: number): void;
  /** A piece failed (not by a Clear or the session's end): the session ends. */
  failed(err: unknown): void;
}

export class Speaker {
  readonly #deps: SpeakerDeps;
  readonly #queue: Item[] = [];
  /** Characters of the pieces queued and not yet spoken. */
  #queuedChars = 0;
  /** Raised by each Clear: work of an older epoch sends nothing more. */
  #epoch = 0;
  /** The piece being made, aborted by a Clear. */
  #current: AbortController | undefined;
  /**
   * The queue is being worked through. Cleared in the same step that finds it empty, so an item
   * pushed at any moment after is never left waiting for a loop that has ended.
   */
  #draining = false;
  #drained: Promise<void> = Promise.resolve();

  constructor(deps: SpeakerDeps) {
    this.#deps = deps;
  }

  /** Characters queued and not yet spoken. */
  get queuedChars(): number {
    return this.#queuedChars;
  }

  speak(text: string): void {
    this.#queuedChars += text.length;
    this.#push({ text });
  }

  flush(sequenceId: number): void {
    this.#push({ flushed: sequenceId });
  }

  /** Drops what is queued and cancels the piece in progress; nothing of them is sent after this. */
  clear(): void {
    this.#epoch++;
    this.#queue.length = 0;
    this.#queuedChars = 0;
    this.#current?.abort(new VoxdError('E_CLIENT_GONE', 'the client cleared the text (Clear)'));
  }

  /** Resolves once everything queued so far has been spoken (or dropped). */
  async idle(): Promise<void> {
    while (this.#draining) await this.#drained;
  }

  #push(item: Item): void {
    this.#queue.push(item);
    if (this.#draining) return;
    this.#draining = true;
    this.#drained = this.#drain();
  }

  async #drain(): Promise<void> {
    const { shell } = this.#deps;
    try {
      for (let item = this.#queue.shift(); item && !shell.ended; item = this.#queue.shift()) {
        if ('flushed' in item) this.#deps.flushed(item.flushed);
        else {
          this.#queuedChars -= item.text.length;
          this.#deps.dequeued();
          await this.#speakPiece(item.text);
        }
      }
    } finally {
      this.#draining = false;
    }
  }

  async #speakPiece(text: string): Promise<void> {
    const { shell } = this.#deps;
    const epoch = this.#epoch;
    const current = () => epoch === this.#epoch && !shell.ended;
    const own = new AbortController();
    this.#current = own;
    try {
      for (let attempt = 0; ; attempt++) {
        const made = { sent: false };
        try {
          await shell.work(async (signal) => {
            const onGone = () => own.abort(signal.reason);
            if (signal.aborted) onGone();
            else signal.addEventListener('abort', onGone, { once: true });
            try {
              await this.#synthesize(text, own.signal, current, made);
            } finally {
              signal.removeEventListener('abort', onGone);
            }
          });
          return;
        } catch (err) {
          // A Clear or the session's end cancelled it: nothing to tell.
          if (!current()) return;
          // Lost with a shared runner another request's cancel stopped (a Clear on another socket
          // of the model): spoken again from the queue, when none of it went out yet.
          if (attempt < RESTART_RETRIES && !made.sent && (err as VoxdError).code === 'E_ENGINE_RESTARTED')
            continue;
          this.#deps.failed(err);
          return;
        }
      }
    } finally {
      if (this.#current === own) this.#current = undefined;
    }
  }

  async #synthesize(
    text: string,
    signal: AbortSignal,
    current: () => boolean,
    made: { sent: boolean },
  ): Promise<void> {
    const { runtime, model, request, format, sendAudio } = this.#deps;
    const audio = new SpeakAudio(format);
    let events = 0;
    const send = async (bytes: Buffer) => {
      if (bytes.length === 0 || !current()) return;
      made.sent = true;
      await sendAudio(bytes, current);
    };
    const relay = (piece: Audio) => relayAudio(piece, audio, send, current);
    const outcome = await runtime.infer(
      model,
      { ...request, text },
      {
        signal,
        eventsOnly: true,
        onEvent: (event) => {
          if (event.type !== 'audio') return undefined;
          events++;
          return relay(event.audio);
        },
      },
    );
    // An engine that answers whole: its audio as one piece.
    if (events === 0) {
      if (!outcome.result.audio) throw new VoxdError('E_ENGINE', `model '${model}' produced no audio output`);
      await relay(outcome.result.audio);
    }
    await send(audio.end());
  }
}
