/**
 * The web UI: the static files under `ui/` at the package root (GET / and GET /ui/<file>), and the
 * dashboard's status stream (GET /v1/ui/status/stream). All of it answers 404 while `ui` is off.
 */
import { readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { modelList } from '../../api/model-status.js';
import { notFound } from '../../errors.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { Reply, Route, RouteContext } from '../transport/route.js';
import { StatusFeed } from '../transport/status-feed.js';

/** `ui/` at the package root: this file is dist/src/http/routes/ui.js once built. */
export const UI_DIR = fileURLToPath(new URL('../../../../ui/', import.meta.url));

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
};

/**
 * The files the UI serves, name to content type: the plain files of `ui/` with a known extension,
 * listed once at startup. A fixed allow-list, so no request path ever reaches the file system.
 */
const UI_FILES: Readonly<Record<string, string>> = Object.fromEntries(
  readdirSync(UI_DIR, { withFileTypes: true }).flatMap((entry) => {
    const match = /^[a-z][a-z0-9-]*\.([a-z]+)$/.exec(entry.name);
    const type = match && CONTENT_TYPES[match[1]!];
    return entry.isFile() && type ? [[entry.name, type]] : [];
  }),
);

/** audio.cpp's UI headers: nothing cached, nothing sniffed, nothing loaded from elsewhere. */
const CSP = [
  "default-src 'self'",
  "img-src 'self' blob: data:",
  "media-src 'self' blob: data:",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'self'",
].join('; ');

const UI_HEADERS: Readonly<Record<string, string>> = {
  'Cache-Control': 'no-store',
  Expires: '0',
  Pragma: 'no-cache',
  'X-Content-Type-Options': 'nosniff',
  'Content-Security-Policy': CSP,
};

function requireUi(ctx: RouteContext, path: string): void {
  if (!ctx.config.ui) throw notFound(`unknown endpoint: ${path}`);
}

async function uiFile(name: string, page: boolean): Promise<Reply> {
  const contentType = UI_FILES[name];
  if (contentType === undefined) throw notFound(`unknown endpoint: /ui/${name}`);
  const body = await readFile(`${UI_DIR}${name}`);
  const headers = page ? { ...UI_HEADERS, 'Clear-Site-Data': '"cache"' } : { ...UI_HEADERS };
  return { body, contentType, headers };
}

async function index(ctx: RouteContext): Promise<Reply> {
  requireUi(ctx, '/');
  return uiFile('index.html', true);
}

/** How often the status feed reads the runtime's status; a stream sends only when the JSON changed. */
export const STATUS_POLL_MS = 1000;
/** A comment line this often keeps proxies from closing a quiet stream. */
export const STATUS_HEARTBEAT_MS = 15_000;

/** Status streams running now (tests check that a client leaving stops its timer). */
let openStreams = 0;
export const openStatusStreams = (): number => openStreams;

/** Each runtime's status feed, shared by all its status streams. */
const feeds = new WeakMap<Runtime, StatusFeed>();

function feedOf(runtime: Runtime): StatusFeed {
  let feed = feeds.get(runtime);
  if (!feed) {
    feed = new StatusFeed(() => JSON.stringify(snapshot(runtime)), STATUS_POLL_MS);
    feeds.set(runtime, feed);
  }
  return feed;
}

/**
 * GET /v1/ui/status/stream: the /v1/models data as SSE `data:` events, at once and then on each
 * change (checked once a second, one snapshot for every stream: status-feed.ts), with a comment
 * heartbeat. It ends when the client goes, and with `data: [DONE]` once a shutdown begins, so it
 * never holds a drain open.
 */
async function statusStream(ctx: RouteContext): Promise<Reply> {
  requireUi(ctx, '/v1/ui/status/stream');
  const { runtime, signal } = ctx;
  return {
    stream: {
      format: 'sse',
      run: async (out) => {
        openStreams++;
        const feed = feedOf(runtime);
        const leave = feed.subscribe();
        try {
          out.start();
          let last: string | undefined;
          let quietSince = Date.now();
          while (!signal.aborted && !runtime.closing) {
            const json = feed.json;
            if (json !== last) {
              last = json;
              quietSince = Date.now();
              await out.frame(feed.frame);
            } else if (Date.now() - quietSince >= STATUS_HEARTBEAT_MS) {
              quietSince = Date.now();
              await out.comment('heartbeat');
            }
            await feed.next(signal);
          }
          if (!signal.aborted) await out.done();
        } finally {
          leave();
          openStreams--;
        }
      },
    },
  };
}

function snapshot(runtime: Runtime): object {
  return { object: 'list', data: modelList(runtime, { sessionOptions: false, params: false }) };
}

export const uiRoutes: Route[] = [
  { method: 'GET', path: '/', scope: 'open', handler: index },
  ...Object.keys(UI_FILES).map(
    (name): Route => ({
      method: 'GET',
      path: `/ui/${name}`,
      scope: 'open',
      handler: async (ctx) => {
        requireUi(ctx, `/ui/${name}`);
        return uiFile(name, false);
      },
    }),
  ),
  { method: 'GET', path: '/v1/ui/status/stream', scope: 'inference', handler: statusStream },
];
