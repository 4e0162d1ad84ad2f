/**
 * The one catalogue of voxd errors. Every error that can reach a client carries a stable `code`;
 * the HTTP status, the wire `type` and the wire `code` (`apiCode`, the OpenAI-style
 * machine-readable string) of each code live here and nowhere else. describeError turns any error
 * into the protocol-neutral description every surface sends (src/http/transport/errors.ts writes it as
 * an HTTP response; realtime, the bridge and Wyoming put it in their error events).
 */

export const ERROR_CODES = {
  /** Malformed JSON, a missing or invalid field, an unsupported value. */
  E_INVALID_REQUEST: { status: 400, type: 'invalid_request_error', apiCode: 'invalid_request' },
  /** A management route while ui_management is off; a server file outside the file roots. */
  E_FORBIDDEN: { status: 403, type: 'forbidden', apiCode: 'forbidden' },
  /** API keys are set and the request sent none (401, with `WWW-Authenticate: Bearer`). */
  E_MISSING_API_KEY: { status: 401, type: 'authentication_error', apiCode: 'missing_api_key' },
  /** The request's API key is not one of the server's. */
  E_INVALID_API_KEY: { status: 401, type: 'authentication_error', apiCode: 'invalid_api_key' },
  /** The API key is valid but its scope does not cover the route (an inference key on an admin route). */
  E_INSUFFICIENT_SCOPE: { status: 403, type: 'permission_error', apiCode: 'insufficient_scope' },
  /**
   * A keyless server's request (or WebSocket upgrade) whose Host is a DNS name voxd was not told
   * it answers to (allowed_hosts): a page reaching it through a name of its own (DNS rebinding).
   */
  E_HOST_NOT_ALLOWED: { status: 403, type: 'forbidden', apiCode: 'host_not_allowed' },
  /**
   * A page of another origin: a WebSocket upgrade, or a keyless server's POST, whose Origin is not
   * voxd's own (nor an allowed_hosts name) while cors_origins is not "*".
   */
  E_ORIGIN_NOT_ALLOWED: { status: 403, type: 'forbidden', apiCode: 'origin_not_allowed' },
  /** A keyless server's POST whose Content-Type is not one its route reads (a JSON route: application/json). */
  E_UNSUPPORTED_MEDIA_TYPE: { status: 415, type: 'invalid_request_error', apiCode: 'unsupported_media_type' },
  /** Unknown model id. */
  E_MODEL_NOT_FOUND: { status: 404, type: 'not_found', apiCode: 'model_not_found' },
  /** Unknown endpoint. */
  E_NOT_FOUND: { status: 404, type: 'not_found', apiCode: 'not_found' },
  /** A known path with the wrong method. */
  E_METHOD_NOT_ALLOWED: { status: 405, type: 'invalid_request_error', apiCode: 'method_not_allowed' },
  /** A WebSocket endpoint (/v1/realtime) asked without the upgrade. */
  E_UPGRADE_REQUIRED: { status: 426, type: 'invalid_request_error', apiCode: 'upgrade_required' },
  /** The request body is larger than max_request_body_bytes. */
  E_BODY_TOO_LARGE: { status: 413, type: 'invalid_request_error', apiCode: 'body_too_large' },
  /** Input audio longer than max_audio_seconds (the server's, or the model's). */
  E_AUDIO_TOO_LONG: { status: 413, type: 'invalid_request_error', apiCode: 'audio_too_long' },
  /** No byte of the request body arrived for body_timeout_ms, or the whole body took past body_deadline_ms. */
  E_BODY_TIMEOUT: { status: 408, type: 'timeout_error', apiCode: 'body_timeout' },
  /**
   * The request bodies the server holds at once would pass max_inflight_body_bytes; sent with
   * Retry-After, before the body is read.
   */
  E_BODY_BUDGET: { status: 503, type: 'server_busy', apiCode: 'body_budget' },
  /** The server holds max_connections connections already; sent with Retry-After, then closed. */
  E_TOO_MANY_CONNECTIONS: { status: 503, type: 'server_busy', apiCode: 'too_many_connections' },
  /** max_realtime_sessions sessions are open already; sent with Retry-After at the upgrade. */
  E_TOO_MANY_SESSIONS: { status: 503, type: 'server_busy', apiCode: 'too_many_sessions' },
  /** max_client_secrets ephemeral realtime keys are live already; sent with Retry-After. */
  E_TOO_MANY_CLIENT_SECRETS: { status: 503, type: 'server_busy', apiCode: 'too_many_client_secrets' },
  /**
   * A WebSocket bridge socket already has as many requests waiting behind the one running as it may
   * hold (docs/websocket-bridge.md); answered at once as that frame's response.
   */
  E_BRIDGE_BACKLOG: { status: 503, type: 'server_busy', apiCode: 'bridge_backlog' },
  /** A holder overran the busy timeout, or the wait for a slot timed out. */
  E_BUSY: { status: 503, type: 'server_busy', apiCode: 'server_busy' },
  /** The model's wait queue holds max_queued_requests already; sent with Retry-After. */
  E_QUEUE_FULL: { status: 503, type: 'server_busy', apiCode: 'queue_full' },
  /** max_loaded_models is reached and every loaded model is busy. */
  E_RESIDENCY_FULL: { status: 503, type: 'server_busy', apiCode: 'residency_full' },
  /** Free memory is below min_free_memory_mb plus the model's footprint. */
  E_INSUFFICIENT_MEMORY: { status: 503, type: 'insufficient_memory', apiCode: 'insufficient_memory' },
  /** The server is shutting down and takes no new work. */
  E_SHUTTING_DOWN: { status: 503, type: 'server_busy', apiCode: 'shutting_down' },
  /**
   * The model's shared runner was stopped while this request ran on it, for another request's
   * sake (or it crashed under several requests at once): retry; the next request starts it afresh.
   */
  E_ENGINE_RESTARTED: { status: 503, type: 'server_busy', apiCode: 'engine_restarted' },
  /** An engine failed to load, prepare or run. */
  E_ENGINE: { status: 500, type: 'server_error', apiCode: 'engine_error' },
  /** A request ran past max_inference_ms and was cancelled. */
  E_INFERENCE_TIMEOUT: { status: 504, type: 'timeout_error', apiCode: 'inference_timeout' },
  /**
   * A streaming session (realtime, Wyoming, the bridge) whose client sent no whole event for its
   * idle timeout, or began an event and did not finish it in time; the session ends.
   */
  E_SESSION_IDLE: { status: 408, type: 'invalid_request_error', apiCode: 'session_idle_timeout' },
  /** A streaming session reached its longest life (realtime_max_session_ms); the session ends. */
  E_SESSION_EXPIRED: { status: 408, type: 'invalid_request_error', apiCode: 'session_expired' },
  /** A client stopped reading what a session sends for live_ingest.send_timeout_ms; the session ends. */
  E_SEND_TIMEOUT: { status: 408, type: 'timeout_error', apiCode: 'send_timeout' },
  /** The client went away; nothing is written back. */
  E_CLIENT_GONE: { status: 499, type: 'client_closed_request', apiCode: 'client_gone' },
  /** A model install job runs (a second install of its id, a models-root change while any runs). */
  E_INSTALL_ACTIVE: { status: 409, type: 'invalid_request_error', apiCode: 'model_install_active' },
  /** A package download failed: an HTTP error status, a broken connection, a size or checksum mismatch. */
  E_DOWNLOAD: { status: 502, type: 'server_error', apiCode: 'download_failed' },
  /**
   * A download's host gave no HTTP answer: its name does not resolve, or the connection was refused,
   * reset, timed out or spoke no HTTP (one message for all of these, so ports are not told apart).
   */
  E_HOST_UNREACHABLE: { status: 502, type: 'server_error', apiCode: 'host_unreachable' },
  /** A download sent no byte for the stall timeout. */
  E_DOWNLOAD_STALLED: { status: 504, type: 'timeout_error', apiCode: 'download_stalled' },
  /**
   * Not enough free disk space for a download, or the disk filled during one or while an archive
   * was extracted; the temporary folder filled while an upload was spooled to it.
   */
  E_INSUFFICIENT_STORAGE: { status: 507, type: 'server_error', apiCode: 'insufficient_storage' },
  /**
   * A download past max_download_bytes, or an archive whose listing expands past
   * max_package_bytes or holds more entries than the installer unpacks (refused before extraction).
   */
  E_PACKAGE_TOO_LARGE: { status: 413, type: 'invalid_request_error', apiCode: 'package_too_large' },
  /**
   * An archive entry would land outside the package folder (or through a symbolic link), is a link
   * pointing outside, a device file or another type voxd does not extract, or holds more bytes than
   * it declares.
   */
  E_UNSAFE_ARCHIVE: { status: 502, type: 'server_error', apiCode: 'unsafe_archive' },
  /** An installed folder that no engine family (or not the package's family) recognises. */
  E_PACKAGE_UNRECOGNISED: { status: 422, type: 'invalid_request_error', apiCode: 'package_unrecognised' },
  /** An install job was stopped. */
  E_INSTALL_CANCELLED: { status: 409, type: 'invalid_request_error', apiCode: 'install_cancelled' },
  /** A fault inside voxd itself. */
  E_INTERNAL: { status: 500, type: 'server_error', apiCode: 'internal_error' },
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface VoxdErrorOptions {
  cause?: unknown;
  /**
   * The request field at fault (`seed`, `options.x`, `requests[0].input`), sent as `error.param`
   * (null when not set: an error about no one field).
   */
  param?: string;
  /** Seconds a client should wait before retrying, sent as the Retry-After header. */
  retryAfterS?: number;
}

export class VoxdError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly type: string;
  readonly param: string | undefined;
  readonly retryAfterS: number | undefined;

  constructor(code: ErrorCode, message: string, options?: VoxdErrorOptions) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'VoxdError';
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.type = ERROR_CODES[code].type;
    this.param = options?.param;
    this.retryAfterS = options?.retryAfterS;
  }
}

/**
 * A fault in what a client sent that is not a VoxdError: a registration body's ConfigError, an
 * uploaded WAV's WavError. describeError answers it with a 400 naming `param` when it knows one.
 */
export class InputError extends Error {
  /** The request field at fault, when the error knows it. */
  get param(): string | undefined {
    return undefined;
  }
}

export const invalidRequest = (message: string, cause?: unknown) =>
  new VoxdError('E_INVALID_REQUEST', message, { cause });
/** A 400 for one named field: `param` goes to the client as `error.param`. */
export const invalidField = (param: string, message: string, cause?: unknown) =>
  new VoxdError('E_INVALID_REQUEST', message, { param, cause });
/** A 400 about a place in a client's JSON: its field path, or none (undefined, '') for the whole body. */
export const invalidAt = (path: string | undefined, message: string) =>
  path ? invalidField(path, message) : invalidRequest(message);
export const notFound = (message: string) => new VoxdError('E_NOT_FOUND', message);
export const unknownModel = (id: string) =>
  new VoxdError('E_MODEL_NOT_FOUND', `unknown model id: ${showValue(id)}`, { param: 'model' });
/** A catalogue package that is not installed: the 404 says how to install it. */
export const notInstalled = (id: string) =>
  new VoxdError(
    'E_MODEL_NOT_FOUND',
    `unknown model id: ${showValue(id)}: it is in voxd's model catalogue but not installed; run \`voxd models pull ${id}\` (or install it from the web UI's Installer tab), then ask again`,
    { param: 'model' },
  );
export const busy = (message: string) => new VoxdError('E_BUSY', message);

export function isVoxdError(err: unknown): err is VoxdError {
  return err instanceof VoxdError;
}

/**
 * Cuts text to at most `max` characters, marking the cut with `...`. Error messages show what the
 * client sent, and a client can send megabytes; the message must stay a message.
 */
export function cutText(text: string, max = 80): string {
  return text.length > max ? `${text.slice(0, max - 3)}...` : text;
}

/** Shows a value in an error message: strings quoted, everything else as JSON, long values cut. */
export function showValue(value: unknown): string {
  let text: string;
  if (value === undefined) text = 'undefined';
  // Only a prefix is shown, so only a prefix is quoted (a value can be megabytes long).
  else if (typeof value === 'string') text = JSON.stringify(value.slice(0, 80));
  else {
    try {
      text = JSON.stringify(value) ?? String(value);
    } catch {
      text = String(value);
    }
  }
  return cutText(text);
}

/**
 * The longest error message a client is sent. Messages cut each value they echo (showValue), and
 * this cap is the safety net for one that does not: no request can make voxd echo megabytes.
 */
export const MAX_ERROR_MESSAGE_CHARS = 1000;

/**
 * The error object every surface sends: `message` and `type` are what audio.cpp clients read;
 * `param` and `code` complete the OpenAI shape.
 */
export interface ErrorObject {
  message: string;
  type: string;
  /** The request field at fault (`seed`, `options.speed`, `requests[0].input`), else null. */
  param: string | null;
  /** The catalogue's machine-readable code (`invalid_request`, `model_not_found`, `server_busy`, ...). */
  code: string;
}

/** An error as any protocol tells it: HTTP writes it as a response, realtime and Wyoming as an event. */
export interface ErrorDescription {
  status: number;
  error: ErrorObject;
  /** True when the cause is a fault in voxd or an engine rather than in the request. */
  internal: boolean;
  /** Seconds a client should wait before retrying (a full queue). */
  retryAfterS?: number;
}

function errorObject(code: ErrorCode, message: string, param?: string): ErrorObject {
  const { type, apiCode } = ERROR_CODES[code];
  return {
    message: cutText(message, MAX_ERROR_MESSAGE_CHARS),
    type,
    // From the throw site (invalidField, a schema's path), never read back out of the message.
    param: param ?? null,
    code: apiCode,
  };
}

/**
 * The one mapping from errors to what a client is told. Unknown errors are internal faults: the
 * caller logs them in full, and the client gets a generic 500 so internals do not leak.
 */
export function describeError(err: unknown): ErrorDescription {
  if (err instanceof VoxdError) {
    return {
      status: err.status,
      error: errorObject(err.code, err.message, err.param),
      // Refusals (busy, residency, memory, shutdown) are expected; only faults are logged in full.
      internal: err.code === 'E_ENGINE' || err.code === 'E_INTERNAL',
      ...(err.retryAfterS === undefined ? {} : { retryAfterS: err.retryAfterS }),
    };
  }
  if (err instanceof InputError) {
    return {
      status: ERROR_CODES.E_INVALID_REQUEST.status,
      error: errorObject('E_INVALID_REQUEST', err.message, err.param),
      internal: false,
    };
  }
  const { status, type, apiCode } = ERROR_CODES.E_INTERNAL;
  return {
    status,
    error: { message: 'internal server error', type, param: null, code: apiCode },
    internal: true,
  };
}
