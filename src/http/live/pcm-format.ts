/**
 * The PCM format a live-ingest client declares in the query (`sample_rate`, `channels`,
 * `sample_format`). It is apart from the body reader because it is checked before the body is
 * opened, and because it is pure: a query in, a format or a 400 out, testable without a socket.
 */
import { invalidField, showValue } from '../../errors.js';

export type LiveSampleFormat = 's16le' | 'f32le';

export interface LivePcmFormat {
  /** Frames per second, 1000..384000. */
  sampleRate: number;
  /** Interleaved channels, 1..16. */
  channels: number;
  sampleFormat: LiveSampleFormat;
}

export const LIVE_PCM_DEFAULTS: Readonly<LivePcmFormat> = Object.freeze({
  sampleRate: 16000,
  channels: 1,
  sampleFormat: 's16le',
});

/**
 * `sample_rate` (default 16000, integer 1000..384000), `channels` (default 1, 1..16) and
 * `sample_format` (`s16le` default, or `f32le`) from a live route's query. Integers are parsed in
 * full (digits only: "16000junk", "+16000", "" are refused). A bad value is a 400 naming the
 * parameter and the value. A repeated parameter: the first occurrence counts.
 */
export function parseLivePcmFormat(query: URLSearchParams): LivePcmFormat {
  return {
    sampleRate: integerParam(query, 'sample_rate', LIVE_PCM_DEFAULTS.sampleRate, 1000, 384000),
    channels: integerParam(query, 'channels', LIVE_PCM_DEFAULTS.channels, 1, 16),
    sampleFormat: sampleFormatParam(query),
  };
}

function integerParam(query: URLSearchParams, name: string, fallback: number, min: number, max: number) {
  const raw = query.get(name);
  if (raw === null) return fallback;
  const value = /^[0-9]+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(value >= min && value <= max)) {
    throw invalidField(name, `invalid ${name} ${showValue(raw)}: expected an integer from ${min} to ${max}`);
  }
  return value;
}

function sampleFormatParam(query: URLSearchParams): LiveSampleFormat {
  const raw = query.get('sample_format');
  if (raw === null) return LIVE_PCM_DEFAULTS.sampleFormat;
  if (raw === 's16le' || raw === 'f32le') return raw;
  throw invalidField('sample_format', `invalid sample_format ${showValue(raw)}: expected s16le or f32le`);
}
