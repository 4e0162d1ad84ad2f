/** Reading request bodies within max_request_body_bytes, and parsing JSON bodies. */
import type { IncomingMessage } from 'node:http';
import { isPlainObject } from '../config/errors.js';
import { invalidRequest, VoxdError } from '../errors.js';

function tooLarge(limit: number): VoxdError {
  return new VoxdError('E_BODY_TOO_LARGE', `request body exceeds max_request_body_bytes=${limit}`);
}

/** Rejects at once when Content-Length already says the body is too large. */
export function checkDeclaredLength(req: IncomingMessage, limit: number): void {
  const declared = req.headers['content-length'];
  if (declared === undefined) return;
  if (!/^\d+$/.test(declared)) throw invalidRequest(`Content-Length: "${declared}" is not a decimal number`);
  if (Number(declared) > limit) throw tooLarge(limit);
}

export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  checkDeclaredLength(req, limit);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw tooLarge(limit);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

export interface JsonBodySource {
  req: IncomingMessage;
  config: { max_request_body_bytes: number; log: boolean; log_request_body: boolean };
  log(message: string): void;
}

/**
 * A JSON object body; anything else is a 400 that says what was wrong. With `--log` and
 * log_request_body the body is logged (JSON bodies only: audio uploads never are).
 */
export async function readJsonObject({ req, config, log }: JsonBodySource): Promise<Record<string, unknown>> {
  const raw = await readBody(req, config.max_request_body_bytes);
  if (config.log && config.log_request_body) log(`${req.method} ${req.url} body: ${raw.toString('utf8')}`);
  if (raw.length === 0) throw invalidRequest('request body is empty; expected a JSON object');
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch (err) {
    throw invalidRequest(`request body is not valid JSON: ${(err as Error).message}`);
  }
  if (!isPlainObject(parsed)) {
    throw invalidRequest(
      `request body must be a JSON object, got ${Array.isArray(parsed) ? 'an array' : parsed === null ? 'null' : typeof parsed}`,
    );
  }
  return parsed;
}
