/**
 * The messages of Deepgram's `/v1/speak` socket, as `@deepgram/sdk` types them
 * (speak/v1/types): the client's `Speak {text}`, `Flush`, `Clear`, `Close`; the server's
 * `Metadata`, `Flushed`, `Cleared`, `Warning`. A message voxd cannot take is a Warning, never the
 * session's end (Deepgram answers a bad message the same way).
 */
import { randomUUID } from 'node:crypto';
import { showValue } from '../../../errors.js';
import { VERSION } from '../../../version.js';
import { modelUuid } from '../model-name.js';

export type ClientMessage =
  | { type: 'Speak'; text: string }
  | { type: 'Flush' | 'Clear' | 'Close' | 'KeepAlive' };

/**
 * The SDK's four, and `KeepAlive`, which Deepgram's listen socket takes and clients send to every
 * Deepgram socket: it keeps the session from its idle timeout and does nothing else.
 */
export const CLIENT_TYPES = ['Speak', 'Flush', 'Clear', 'Close', 'KeepAlive'] as const;

/** Warning codes voxd sends (Deepgram documents none for its Warning; these name the cause). */
export type WarningCode = 'INVALID_MESSAGE' | 'TEXT_TOO_LONG' | 'BUFFER_FULL' | 'SESSION_ENDING';

export class BadMessage extends Error {}

/** The client message in a text frame; throws BadMessage saying what is wrong. */
export function parseMessage(data: Buffer): ClientMessage {
  let raw: unknown;
  try {
    raw = JSON.parse(data.toString('utf8'));
  } catch {
    throw new BadMessage(
      `a text frame must be a JSON message such as {"type":"Speak","text":"..."}; got ${showValue(cut(data))}`,
    );
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw new BadMessage(`message: ${showValue(raw)} is not a JSON object`);
  const fields = raw as Record<string, unknown>;
  const type = fields['type'];
  if (typeof type !== 'string' || !(CLIENT_TYPES as readonly string[]).includes(type))
    throw new BadMessage(
      `type: ${showValue(type)} is not a message of /v1/speak; expected one of: ${CLIENT_TYPES.join(', ')}`,
    );
  if (type !== 'Speak') return { type: type as 'Flush' | 'Clear' | 'Close' | 'KeepAlive' };
  const text = fields['text'];
  if (typeof text !== 'string') throw new BadMessage(`text: ${showValue(text)} is not a string`);
  return { type, text };
}

function cut(data: Buffer): string {
  const text = data.subarray(0, 80).toString('utf8');
  return data.length > 80 ? `${text}...` : text;
}

/** The Metadata a session opens with: the model's name as asked (a Deepgram name echoed back). */
export function metadata(modelName: string, modelId: string) {
  return {
    type: 'Metadata',
    request_id: randomUUID(),
    model_name: modelName,
    model_version: VERSION,
    model_uuid: modelUuid(modelId),
  };
}

/**
 * A Warning: the SDK's `description` and `code`, and the `warn_code`/`warn_msg` of Deepgram's
 * earlier shape, which LiveKit's plugin still logs.
 */
export function warning(code: WarningCode, description: string) {
  return { type: 'Warning', description, code, warn_code: code, warn_msg: description };
}
