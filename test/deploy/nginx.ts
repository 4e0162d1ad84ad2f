/**
 * A real nginx (the Debian package) in front of voxd replicas, for the scale-out tests: the
 * configuration docs/deploy.md recommends, a free port, and the master process started in the
 * foreground and stopped by its own pid.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setting } from '../../src/config/settings.js';
import type { Exit } from '../helpers/cli.js';
import { withDeadline } from '../helpers/voxd.js';

export const NGINX = '/usr/sbin/nginx';
export const MISSING = `${NGINX} is missing: install the Debian package nginx (npm test's setup, node scripts/setup.mjs --for-tests, does)`;

/** A free loopback port for nginx (voxd picks its own with --port 0). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * nginx's read and send timeouts for /v1/realtime: a minute more than the replicas'
 * realtime_idle_timeout_ms, so that voxd, not the proxy, ends a silent client's session (with its
 * `session_idle_timeout` event and close 1000, where a proxy's timeout is a bare cut).
 */
export function realtimeProxyTimeoutSeconds(idleTimeoutMs: number): number {
  return Math.ceil(idleTimeoutMs / 1000) + 60;
}

/**
 * The configuration: `location /` is docs/deploy.md's HTTP block (least_conn, retries on a refused
 * connection, a timeout or a 503, no upstream keepalive); `location = /v1/realtime` adds what a
 * WebSocket needs (HTTP/1.1 to the upstream, the Upgrade and Connection headers, the client's Host
 * for voxd's Origin check, timeouts past the idle limit). Every response carries X-Upstream (nginx's
 * $upstream_addr: each replica tried, in order), and the access log records it per request.
 */
export function nginxConf(
  listen: number,
  upstreams: number[],
  dir: string,
  /** The replicas' realtime_idle_timeout_ms (voxd's default unless they set another). */
  realtimeIdleTimeoutMs: number = setting('realtime_idle_timeout_ms').default!,
): string {
  mkdirSync(join(dir, 'temp'), { recursive: true });
  // As root the workers would otherwise run as nobody and could not use the temp folders.
  const user = process.getuid?.() === 0 ? 'user root;' : '';
  const realtimeTimeout = realtimeProxyTimeoutSeconds(realtimeIdleTimeoutMs);
  return `${user}
worker_processes 1;
events { worker_connections 512; }
http {
  log_format upstream '$request_uri $status $upstream_addr';
  access_log ${join(dir, 'access.log')} upstream;
  client_body_temp_path ${join(dir, 'temp', 'body')};
  proxy_temp_path ${join(dir, 'temp', 'proxy')};
  fastcgi_temp_path ${join(dir, 'temp', 'fastcgi')};
  uwsgi_temp_path ${join(dir, 'temp', 'uwsgi')};
  scgi_temp_path ${join(dir, 'temp', 'scgi')};
  map $http_upgrade $connection_upgrade {
    default upgrade;
    '' close;
  }
  upstream voxd {
    least_conn;
${upstreams.map((p) => `    server 127.0.0.1:${p};`).join('\n')}
  }
  server {
    listen 127.0.0.1:${listen};
    location / {
      proxy_pass http://voxd;
      proxy_next_upstream error timeout http_503 non_idempotent;
      proxy_next_upstream_tries 2;
      proxy_read_timeout 120s;
      add_header X-Upstream $upstream_addr always;
    }
    location = /v1/realtime {
      proxy_pass http://voxd;
      proxy_http_version 1.1;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_next_upstream error timeout http_503;
      proxy_next_upstream_tries 2;
      proxy_read_timeout ${realtimeTimeout}s;
      proxy_send_timeout ${realtimeTimeout}s;
      add_header X-Upstream $upstream_addr always;
    }
  }
}
`;
}

export class Nginx {
  readonly child: ChildProcess;
  readonly closed: Promise<Exit>;
  stderr = '';

  constructor(
    readonly dir: string,
    conf: string,
    readonly waitMs: number,
  ) {
    this.child = spawn(
      NGINX,
      [
        '-p',
        dir,
        '-e',
        join(dir, 'error.log'),
        '-c',
        conf,
        '-g',
        `daemon off; pid ${join(dir, 'nginx.pid')};`,
      ],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    this.child.stderr!.setEncoding('utf8');
    this.child.stderr!.on('data', (chunk: string) => {
      this.stderr += chunk;
    });
    this.closed = new Promise((resolve, reject) => {
      this.child.once('error', reject);
      this.child.once('close', (code, signal) => resolve({ code, signal }));
    });
    this.closed.catch(() => {});
  }

  get log(): string {
    const path = join(this.dir, 'error.log');
    return `${this.stderr}${existsSync(path) ? readFileSync(path, 'utf8') : ''}`;
  }

  /** The access log's lines (`$request_uri $status $upstream_addr`), written as each request ends. */
  get accessLog(): string[] {
    const path = join(this.dir, 'access.log');
    return existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean) : [];
  }

  /** SIGQUIT (graceful) to the master by its pid, then SIGKILL if it has not gone by the deadline. */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGQUIT');
    try {
      await withDeadline(this.closed, 'nginx to exit', this.waitMs);
    } catch (err) {
      this.child.kill('SIGKILL');
      await this.closed.catch(() => {});
      throw err;
    }
  }
}
