/**
 * The three busy-timeout layers: server default, model ceiling, request value.
 * Effective = min(request, ceiling), where 0 means unbounded on both sides.
 */
export function effectiveBusyTimeout(requestMs: number | undefined, ceilingMs: number): number {
  if (requestMs === undefined || requestMs === 0) return ceilingMs;
  if (ceilingMs === 0) return requestMs;
  return Math.min(requestMs, ceilingMs);
}
