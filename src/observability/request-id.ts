/**
 * Request ids: a client's own `X-Request-Id` when it is safe to echo and log, else a fresh one.
 * A fresh id is a per-process random prefix and a counter: unique enough to find a request in the
 * logs of a fleet, at the cost of one string concatenation (no crypto call per request).
 */
import { randomBytes } from 'node:crypto';

/** What a client id may hold: it is echoed in a header and written to logs verbatim. */
const VALID = /^[A-Za-z0-9._:-]{1,128}$/;

const PREFIX = randomBytes(4).toString('hex');
let counter = 0;

/** The id of a request: `given` when valid (a string of 1-128 chars of [A-Za-z0-9._:-]), else a new one. */
export function requestIdOf(given: string | string[] | undefined): string {
  if (typeof given === 'string' && VALID.test(given)) return given;
  counter = (counter + 1) % Number.MAX_SAFE_INTEGER;
  return `${PREFIX}-${counter.toString(36)}`;
}
