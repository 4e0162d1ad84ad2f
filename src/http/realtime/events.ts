/**
 * The shapes of a realtime session: its settings as the client set them, the session object of
 * `session.created`/`.updated` (GA) and `transcription_session.*` (beta), the events of a commit,
 * error bodies and ids. Nothing here holds audio or talks to a socket.
 */
import { randomBytes } from 'node:crypto';
import { describeError, VoxdError } from '../../errors.js';
import { DEFAULT_FORMAT, GA_TYPES, gaFormat, type InputFormat } from './audio-format.js';
import { type ServerVad, shownTurnDetection } from './turn-detection.js';

/** The `include` entry that asks for the words' log-probabilities on `.completed`. */
export const LOGPROBS = 'item.input_audio_transcription.logprobs';

export type ErrorBody = { type: string; code: string; message: string; param: string | null };

/** A server event, before its `event_id`. */
export type ServerEvent = { type: string } & Record<string, unknown>;

/** Where a session's fields sit in each shape, for an error's `param`. */
export interface FieldPaths {
  format: string;
  model: string;
  turnDetection: string;
}
export const GA_PARAMS: FieldPaths = {
  format: 'session.audio.input.format',
  model: 'session.audio.input.transcription.model',
  turnDetection: 'session.audio.input.turn_detection',
};
export const BETA_PARAMS: FieldPaths = {
  format: 'session.input_audio_format',
  model: 'session.input_audio_transcription.model',
  turnDetection: 'session.turn_detection',
};

/** Ids' random part, drawn once per process: a counter after it makes each id unique. */
const ID_STEM = randomBytes(6).toString('base64url');
let nextId = 0;
/**
 * A session, item or event id: unique in the process and, through the stem, across processes and
 * restarts. Not a secret (a client sees only its own session's), so no crypto call per id (1.7 µs
 * each, against 0.03 for the counter), as request ids (observability/request-id.ts).
 */
export const newId = (prefix: string) => `${prefix}_${ID_STEM}${(nextId++).toString(36)}`;

/** What the client has set; the input buffer and the turns read it, session.update writes it. */
export class SessionSettings {
  readonly id = newId('sess');
  format: InputFormat = DEFAULT_FORMAT;
  model: string | undefined;
  language: string | undefined;
  prompt: string | undefined;
  include: string[] = [];
  /** Server VAD's settings; undefined when the client commits. */
  vad: ServerVad | undefined;
  /** Whether the client speaks the beta shape (`transcription_session.*`, `conversation.item.created`). */
  beta = false;

  constructor(model: string | undefined) {
    this.model = model;
  }

  /** The GA session object. */
  ga() {
    return {
      type: 'transcription',
      id: this.id,
      object: 'realtime.transcription_session',
      audio: {
        input: {
          format: gaFormat(this.format),
          transcription: this.#transcription(),
          turn_detection: shownTurnDetection(this.vad),
          noise_reduction: null,
        },
      },
      include: this.include,
    };
  }

  /** The beta session object. */
  betaShape() {
    return {
      id: this.id,
      object: 'realtime.transcription_session',
      input_audio_format: this.format.encoding,
      input_audio_transcription: this.#transcription(),
      turn_detection: shownTurnDetection(this.vad),
      input_audio_noise_reduction: null,
      include: this.include,
    };
  }

  #transcription() {
    return { model: this.model ?? null, language: this.language ?? null, prompt: this.prompt ?? '' };
  }
}

/** The events of a commit: the buffer became an item of the conversation (beta: one event, GA: two). */
export function commitEvents(itemId: string, previous: string | null, beta: boolean): ServerEvent[] {
  const item = {
    id: itemId,
    object: 'realtime.item',
    type: 'message',
    status: 'completed',
    role: 'user',
    content: [{ type: 'input_audio', transcript: null }],
  };
  const committed = { type: 'input_audio_buffer.committed', item_id: itemId, previous_item_id: previous };
  if (beta) return [committed, { type: 'conversation.item.created', previous_item_id: previous, item }];
  return [
    committed,
    { type: 'conversation.item.added', previous_item_id: previous, item },
    { type: 'conversation.item.done', previous_item_id: previous, item },
  ];
}

/** The error object of an error event: the HTTP error body's, as the catalogue maps it. */
export function errorBody(err: unknown): ErrorBody {
  return describeError(err).error as ErrorBody;
}

/** A format from its GA type and rate (G.711 is 8 kHz by definition). */
export function formatOf(type: keyof typeof GA_TYPES, rate: number | null | undefined): InputFormat {
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

export const sameFormat = (a: InputFormat, b: InputFormat) => a.encoding === b.encoding && a.rate === b.rate;
