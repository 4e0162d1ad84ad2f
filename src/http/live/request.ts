/** A live route's body, opened for its model: the PCM format of the query, the limits of both configs. */

import { audioLimits } from '../../api/audio-limits.js';
import { liveIngestLimits } from '../../config/live-ingest-limits.js';
import type { ModelEntry } from '../../runtime/model-entry.js';
import type { RouteContext } from '../transport/route.js';
import { type LiveBody, openLiveBody } from './body.js';
import { type LivePcmParams, livePcmFormat } from './pcm-format.js';

/**
 * Opens the body of a live request to `entry` in the format its checked query declares (before anything is awaited: see openLiveBody); its
 * timeouts and `completedAt` run on the runtime's clock.
 */
export function openLiveRequest(
  ctx: RouteContext,
  entry: ModelEntry,
  label: string,
  query: LivePcmParams,
): LiveBody {
  return openLiveBody(ctx.req, {
    format: livePcmFormat(query),
    limits: liveIngestLimits(ctx.config.live_ingest, entry.config.live_ingest),
    signal: ctx.signal,
    maxAudioSeconds: audioLimits(ctx, entry.config).maxSeconds,
    label,
    clock: ctx.runtime.clock,
  });
}
