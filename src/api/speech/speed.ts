/** `speed` (or `speaking_rate`) of a speech request, as the option its model takes. */
import { invalidField, showValue } from '../../errors.js';
import type { Fields } from '../fields.js';

/**
 * The option for the request's `speed` or `speaking_rate` among those the model `accepted`; 1.0 is
 * accepted by any model. Every front end goes through speechRequest, so `voxd speak --speed` means
 * what the HTTP field means.
 */
export function speedOptions(body: Fields, accepted: ReadonlySet<string>): Record<string, string> {
  const key = body['speed'] !== undefined && body['speed'] !== null ? 'speed' : 'speaking_rate';
  const raw = body[key];
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== 'number' || !Number.isFinite(raw) || raw <= 0) {
    throw invalidField(key, `${key}: ${showValue(raw)} is invalid; expected a positive number`);
  }
  const option = accepted.has('speed')
    ? 'speed'
    : accepted.has('speaking_rate')
      ? 'speaking_rate'
      : undefined;
  if (option) return { [option]: String(raw) };
  // 1.0 is what every model does anyway, so it is accepted as if omitted.
  if (raw === 1) return {};
  throw invalidField(key, `${key}: ${raw} is not supported by this model`);
}
