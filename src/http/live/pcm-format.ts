/**
 * The PCM format a live-ingest client declares in the query (`sample_rate`, `channels`,
 * `sample_format`). It is apart from the body reader because it is checked before the body is
 * opened, and because it is pure: a query in, a format or a 400 out, testable without a socket.
 */
import type { Static } from '@sinclair/typebox';
import type { PcmEncoding } from '../../audio/pcm.js';
import { queryChecker } from '../request/schema.js';
import { LivePcmQuery } from '../schemas/query.js';

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

/** The format a checked query declares, with the defaults for what it leaves out. */
export type LivePcmParams = Static<typeof LivePcmQuery>;

export function livePcmFormat(query: LivePcmParams): LivePcmFormat {
  return {
    sampleRate: query.sample_rate ?? LIVE_PCM_DEFAULTS.sampleRate,
    channels: query.channels ?? LIVE_PCM_DEFAULTS.channels,
    sampleFormat: query.sample_format ?? LIVE_PCM_DEFAULTS.sampleFormat,
  };
}

/** How the body's bytes are stored, for the one PCM decoder (audio/pcm.ts). */
export function pcmEncoding(format: LivePcmFormat): PcmEncoding {
  const float = format.sampleFormat === 'f32le';
  return { bits: float ? 32 : 16, float, channels: format.channels };
}

const checkPcmQuery = queryChecker(LivePcmQuery);

/**
 * `sample_rate` (default 16000, integer 1000..384000), `channels` (default 1, 1..16) and
 * `sample_format` (`s16le` default, or `f32le`) from a query, checked against the schema the live
 * routes publish (src/http/schemas/query.ts). Integers are digits only ("16000junk", "+16000", ""
 * are refused). A bad value is a 400 naming the parameter and the value. A repeated parameter: the
 * first occurrence counts.
 */
export function parseLivePcmFormat(query: URLSearchParams): LivePcmFormat {
  return livePcmFormat(checkPcmQuery(query));
}
