/**
 * CORS as audio.cpp does it: with cors_origins "*" every response echoes the request's Origin.
 * voxd adds `Vary: Origin` (the answer depends on it) and exposes the timing headers to scripts.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ServerConfig } from '../../config/types.js';

const EXPOSED = 'X-AudioCPP-Wall-Ms, X-AudioCPP-Audio-Duration-Ms, X-AudioCPP-RTF, X-Request-Id';

export function applyCors(req: IncomingMessage, res: ServerResponse, config: ServerConfig): void {
  const origin = req.headers.origin;
  if (config.cors_origins !== '*' || origin === undefined) return;
  res.setHeader('Access-Control-Allow-Origin', origin);
  res.setHeader('Vary', 'Origin');
  res.setHeader('Access-Control-Expose-Headers', EXPOSED);
}

/** Preflight answers exist only where a browser is expected: CORS on, or the UI enabled. */
export function preflightEnabled(config: ServerConfig): boolean {
  return config.cors_origins === '*' || config.ui;
}

export function writePreflight(res: ServerResponse): void {
  res.writeHead(204, {
    'Content-Type': 'text/plain',
    // `*` does not cover Authorization (Fetch spec), which a keyed server needs from the page.
    'Access-Control-Allow-Headers': '*, Authorization',
    'Access-Control-Allow-Methods': 'GET, POST',
    'Access-Control-Max-Age': '600',
  });
  res.end();
}
