/**
 * A local HTTP server for installer tests (127.0.0.1, a free port). Each path serves a body with a
 * chosen behaviour; every request is recorded (path, Range header) so a test can prove a resume.
 * Orderings are forced with gates: a `stallAfter`/`cutAfter` response waits on a promise the test
 * settles, never on a sleep.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { deferred } from '../../src/util/wait.js';

export interface Route {
  body: Buffer;
  /** Answer 200 with the whole body even to a Range request. */
  ignoreRange?: boolean;
  /** Send this many bytes, then (once `gate` settles, when given) destroy the connection. */
  cutAfter?: number;
  /** Send this many bytes, then nothing until `gate` settles (the response stays open). */
  stallAfter?: number;
  gate?: Promise<void>;
  /** Another status with an empty body (404, 500). */
  status?: number;
  /** A redirect to this path (302). */
  redirectTo?: string;
  /** A Content-Length header that lies (the disk-space test). */
  contentLength?: number;
  /** No Content-Length: the body is sent chunked. */
  noLength?: boolean;
  /** No Content-Length, and zeros without end (with backpressure) until the client goes away. */
  endless?: boolean;
}

export interface Recorded {
  path: string;
  range: string | undefined;
}

export interface FileServer {
  base: string;
  routes: Map<string, Route>;
  requests: Recorded[];
  /** Resolves when the next request for `path` has sent its first bytes. */
  sent(path: string): Promise<void>;
  close(): Promise<void>;
}

export async function startFileServer(): Promise<FileServer> {
  const routes = new Map<string, Route>();
  const requests: Recorded[] = [];
  const waiters = new Map<string, (() => void)[]>();
  const notify = (path: string) => {
    for (const w of waiters.get(path) ?? []) w();
    waiters.delete(path);
  };
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    requests.push({ path, range: req.headers.range });
    const route = routes.get(path);
    if (!route) return void res.writeHead(404).end();
    if (route.status) return void res.writeHead(route.status).end();
    if (route.redirectTo) return void res.writeHead(302, { location: route.redirectTo }).end();
    if (route.endless) {
      res.writeHead(200);
      const zeros = Buffer.alloc(64 * 1024);
      const pump = () => {
        while (!res.destroyed && res.write(zeros));
      };
      res.on('drain', pump);
      pump();
      notify(path);
      return;
    }
    if (route.noLength) {
      res.writeHead(200);
      res.end(route.body);
      notify(path);
      return;
    }
    let body = route.body;
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    if (range && !route.ignoreRange) {
      const start = Number(range[1]);
      if (start >= body.length) {
        return void res.writeHead(416, { 'content-range': `bytes */${body.length}` }).end();
      }
      res.writeHead(206, {
        'content-length': body.length - start,
        'content-range': `bytes ${start}-${body.length - 1}/${body.length}`,
      });
      body = body.subarray(start);
    } else {
      res.writeHead(200, { 'content-length': route.contentLength ?? body.length });
    }
    if (route.contentLength !== undefined) {
      res.flushHeaders();
      notify(path);
      return;
    }
    const stop = route.cutAfter ?? route.stallAfter;
    if (stop === undefined) {
      res.end(body);
      notify(path);
      return;
    }
    res.write(body.subarray(0, stop), () => {
      notify(path);
      const after = route.gate ?? Promise.resolve();
      void after.then(() => {
        if (route.cutAfter !== undefined) res.socket?.destroy();
        else res.end(body.subarray(stop));
      });
    });
  };
  const server: Server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    routes,
    requests,
    sent(path) {
      const d = deferred();
      waiters.set(path, [...(waiters.get(path) ?? []), d.resolve]);
      return d.promise;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
