/**
 * How an engine job's failure crosses the runner boundary with its meaning intact: the engine
 * throws a JobError with a code (anything else it throws is `engine_failed`), the reply carries the
 * code, and the session turns the reply back into a JobError (jobFailed) that the runtime maps to
 * the error catalogue in one place (engineFailure in src/runtime/model-entry.ts). No session reads
 * meaning out of a message.
 */

/**
 * `invalid_voice`: the engine has no such voice (a 400 naming `voice`); `no_audio`: it made no
 * audio of the text (a TTS session skips the sentence; a 400 if it reaches a client);
 * `engine_failed`: anything else the engine threw (a 500).
 */
export type JobErrorCode = 'invalid_voice' | 'no_audio' | 'engine_failed';

export class JobError extends Error {
  constructor(
    readonly code: JobErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** A failed job's reply: the message for people, the code for code. */
export interface JobFailure {
  id: number;
  ok: false;
  message: string;
  code: JobErrorCode;
}

/** A job's reply: its result (`ok`), or its failure. */
export type JobReply = { id: number; ok: true } | JobFailure;

/** The reply of a job whose engine threw `err`. */
export function failureReply(id: number, err: unknown): JobFailure {
  const message = err instanceof Error ? err.message : String(err);
  return { id, ok: false, message, code: err instanceof JobError ? err.code : 'engine_failed' };
}

/** The typed error of a failed job's reply, for the session to throw. */
export function jobFailed(reply: Pick<JobFailure, 'message' | 'code'>): JobError {
  return new JobError(reply.code, reply.message);
}
