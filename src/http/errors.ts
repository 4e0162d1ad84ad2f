/**
 * The one place that turns errors into HTTP: a status and the audio.cpp error body
 * `{"error":{"message","type"}}`. Unknown errors are internal faults: logged in full, answered with
 * a generic 500 so internals do not leak.
 */
import { WavError } from '../audio/wav-decode.js';
import { ConfigError } from '../config/errors.js';
import { cutText, ERROR_CODES, VoxdError } from '../errors.js';

/**
 * The longest error message a client is sent. Messages cut each value they echo (showValue), and
 * this cap is the safety net for one that does not: no request can make voxd echo megabytes.
 */
export const MAX_ERROR_MESSAGE_CHARS = 1000;

export interface HttpError {
  status: number;
  body: { error: { message: string; type: string } };
  /** True when the cause is a fault in voxd or an engine rather than in the request. */
  internal: boolean;
}

export function toHttp(err: unknown): HttpError {
  if (err instanceof VoxdError) {
    return {
      status: err.status,
      body: { error: { message: cutText(err.message, MAX_ERROR_MESSAGE_CHARS), type: err.type } },
      // Refusals (busy, residency, memory, shutdown) are expected; only faults are logged in full.
      internal: err.code === 'E_ENGINE' || err.code === 'E_INTERNAL',
    };
  }
  // Both come from validating what the client sent (a registration body, an uploaded WAV).
  if (err instanceof ConfigError || err instanceof WavError) {
    const { status, type } = ERROR_CODES.E_INVALID_REQUEST;
    return {
      status,
      body: { error: { message: cutText(err.message, MAX_ERROR_MESSAGE_CHARS), type } },
      internal: false,
    };
  }
  const { status, type } = ERROR_CODES.E_INTERNAL;
  return { status, body: { error: { message: 'internal server error', type } }, internal: true };
}
