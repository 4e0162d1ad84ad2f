/** What a route handler gets and gives back; the server writes the reply. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ServerConfig } from '../config/types.js';
import type { Runtime } from '../runtime/runtime.js';

export interface RouteContext {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  runtime: Runtime;
  config: ServerConfig;
  log(message: string): void;
  /** Aborted when the client goes away before the response is sent. */
  signal: AbortSignal;
}

export interface Reply {
  status?: number;
  json?: unknown;
  body?: Buffer;
  contentType?: string;
  headers?: Record<string, string>;
}

export type RouteHandler = (ctx: RouteContext) => Promise<Reply>;

export interface Route {
  method: 'GET' | 'POST';
  path: string;
  handler: RouteHandler;
}
