/**
 * How an engine job's failure crosses the runner boundary with its meaning intact: the engine
 * throws a JobError with a code, the reply carries the code, and the session turns the code back
 * into the typed error (a 400, a skipped sentence). No session reads meaning out of a message.
 */

/** `invalid_voice`: the engine has no such voice (a 400); `no_audio`: it made no audio of the text. */
export type JobErrorCode = 'invalid_voice' | 'no_audio';

export class JobError extends Error {
  constructor(
    readonly code: JobErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** A failed job's reply: the message for people, the code (when the engine gave one) for code. */
export interface JobFailure {
  id: number;
  ok: false;
  message: string;
  code?: JobErrorCode;
}
