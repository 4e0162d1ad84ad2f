/**
 * The adapter between the realtime machinery and Deepgram's messages: a `/v1/listen` session runs
 * the realtime input buffer (server VAD finds utterances, a streaming engine hears each as it is
 * spoken) and turn-taker unchanged, and this turns the events they send (OpenAI's shapes) into
 * what a Deepgram client reads: `SpeechStarted` at speech start, interim `Results` as the engine's
 * words settle (each the utterance's words so far: a word sent is never taken back), the final
 * `Results` when the utterance's transcript is done, and `UtteranceEnd` once `utterance_end_ms` of
 * audio has passed with no new word.
 *
 * Times: an utterance starts where its audio does (the VAD's speech start less its prefix padding);
 * a final's words carry the engine's own times; an interim's words, which the engine sends
 * untimed, are spread evenly over the audio heard so far (they are replaced by the final's).
 */
import type { InferenceOutcome } from '../../../runtime/inference.js';
import type { ErrorBody, ServerEvent } from '../../realtime/events.js';
import {
  type DeepgramWord,
  resultsMessage,
  type SessionFacts,
  speechStartedMessage,
  utteranceEndMessage,
} from './messages.js';
import type { ListenOptions } from './options.js';

/** Why an utterance ended: its silence, the client's Finalize, or the stream's end. */
export type EndCause = 'silence' | 'finalize' | 'end';

export interface TranscriptContext {
  facts: SessionFacts;
  options: ListenOptions;
  send(message: Record<string, unknown>): void;
  /** Milliseconds of audio received so far. */
  heardMs(): number;
  /** A turn or the input failed: the session ends with it. */
  fail(error: ErrorBody): void;
}

interface Utterance {
  startMs: number;
  /** Where its audio ends, once committed. */
  endMs: number | undefined;
  /** The words the engine has settled on so far. */
  words: string[];
  cause: EndCause | undefined;
  outcome: InferenceOutcome | undefined;
}

export class Transcripts {
  readonly #ctx: TranscriptContext;
  readonly #utterances = new Map<string, Utterance>();
  /** The cause of a commit the session makes itself (Finalize, the stream's end), while it makes it. */
  #cause: EndCause | undefined;
  #lastWordEndMs: number | undefined;
  /** Whether an UtteranceEnd was sent for the last word. */
  #announced = true;

  constructor(ctx: TranscriptContext) {
    this.#ctx = ctx;
  }

  /** Whether an utterance is going on or waits for its transcript. */
  get pending(): boolean {
    return this.#utterances.size > 0;
  }

  /** Runs `commit` (which commits utterances) with their cause set to `cause`. */
  async ending<T>(cause: EndCause, commit: () => T | Promise<T>): Promise<T> {
    this.#cause = cause;
    try {
      return await commit();
    } finally {
      this.#cause = undefined;
    }
  }

  /** One event of the input buffer or the turn-taker. */
  event(event: ServerEvent): void {
    const id = typeof event['item_id'] === 'string' ? event['item_id'] : '';
    const utterance = this.#utterances.get(id);
    switch (event.type) {
      case 'input_audio_buffer.speech_started': {
        const startMs = event['audio_start_ms'] as number;
        this.#utterances.set(id, {
          startMs,
          endMs: undefined,
          words: [],
          cause: undefined,
          outcome: undefined,
        });
        if (this.#ctx.options.vadEvents) this.#ctx.send(speechStartedMessage(startMs));
        return;
      }
      case 'input_audio_buffer.speech_stopped':
        if (utterance) utterance.endMs = (event['audio_end_ms'] as number) + this.#ctx.options.silenceMs;
        return;
      case 'input_audio_buffer.committed':
        if (!utterance) return;
        utterance.cause = this.#cause ?? 'silence';
        utterance.endMs = Math.min(utterance.endMs ?? Number.POSITIVE_INFINITY, this.#ctx.heardMs());
        return;
      case 'conversation.item.input_audio_transcription.delta':
        if (!utterance) return;
        utterance.words.push(...words(event['delta'] as string));
        if (this.#ctx.options.interimResults) this.#interim(utterance);
        return;
      case 'conversation.item.input_audio_transcription.completed':
        if (utterance) this.#final(id, utterance, event['transcript'] as string);
        return;
      case 'conversation.item.input_audio_transcription.failed':
        this.#utterances.delete(id);
        this.#ctx.fail(event['error'] as ErrorBody);
        return;
      case 'error':
        this.#ctx.fail(event['error'] as ErrorBody);
        return;
    }
  }

  /** A turn's run answered: its timed words, read when its transcript completes. */
  transcribed(itemId: string, outcome: InferenceOutcome): void {
    const utterance = this.#utterances.get(itemId);
    if (utterance) utterance.outcome = outcome;
  }

  /** A Finalize with no speech going on: an empty final says it was done. */
  nothingToFinalize(): void {
    const at = this.#ctx.heardMs();
    this.#ctx.send(
      resultsMessage(this.#ctx.facts, {
        startMs: at,
        durationMs: 0,
        isFinal: true,
        speechFinal: false,
        fromFinalize: true,
        words: [],
      }),
    );
  }

  /** Audio arrived (or an utterance ended): an UtteranceEnd when utterance_end_ms passed since the last word. */
  checkUtteranceEnd(): void {
    const ms = this.#ctx.options.utteranceEndMs;
    const last = this.#lastWordEndMs;
    if (ms === undefined || last === undefined || this.#announced || this.pending) return;
    if (this.#ctx.heardMs() - last < ms) return;
    this.#announced = true;
    this.#ctx.send(utteranceEndMessage(last));
  }

  #interim(utterance: Utterance): void {
    const { startMs } = utterance;
    const heard = Math.max(startMs, this.#ctx.heardMs());
    this.#ctx.send(
      resultsMessage(this.#ctx.facts, {
        startMs,
        durationMs: heard - startMs,
        isFinal: false,
        speechFinal: false,
        fromFinalize: false,
        words: spread(utterance.words, startMs, heard, 0),
      }),
    );
  }

  #final(id: string, utterance: Utterance, transcript: string): void {
    this.#utterances.delete(id);
    const { startMs, cause } = utterance;
    const endMs = Math.max(startMs, utterance.endMs ?? this.#ctx.heardMs());
    const said = words(transcript);
    const words_ = timedWords(utterance.outcome, said, startMs) ?? spread(said, startMs, endMs, 0);
    this.#ctx.send(
      resultsMessage(this.#ctx.facts, {
        startMs,
        durationMs: endMs - startMs,
        isFinal: true,
        speechFinal: cause === 'silence' && this.#ctx.options.endpointing,
        fromFinalize: cause === 'finalize',
        words: words_,
      }),
    );
    const last = words_.at(-1);
    if (last) {
      this.#lastWordEndMs = last.end * 1000;
      this.#announced = false;
    }
    this.checkUtteranceEnd();
  }
}

const words = (text: string): string[] => text.split(/\s+/).filter(Boolean);

const word = (text: string, startMs: number, endMs: number, confidence: number): DeepgramWord => ({
  word: text,
  start: Math.round(startMs) / 1000,
  end: Math.round(endMs) / 1000,
  confidence,
  punctuated_word: text,
});

/** `said` spread evenly over [fromMs, toMs]: words whose times the engine did not give. */
function spread(said: readonly string[], fromMs: number, toMs: number, confidence: number): DeepgramWord[] {
  const step = said.length === 0 ? 0 : (toMs - fromMs) / said.length;
  return said.map((w, i) => word(w, fromMs + i * step, fromMs + (i + 1) * step, confidence));
}

/**
 * The engine's timed words on the stream's timeline (they count samples from the utterance's
 * start at the rate the engine heard); undefined when it gave none, or not one per word said.
 */
function timedWords(outcome: InferenceOutcome | undefined, said: readonly string[], startMs: number) {
  const timed = outcome?.result.words ?? [];
  if (timed.length === 0 || timed.length !== said.length) return undefined;
  const perMs = outcome!.inputSampleRate / 1000;
  return timed.map((w, i) =>
    word(said[i]!, startMs + w.start_sample / perMs, startMs + w.end_sample / perMs, w.confidence),
  );
}
