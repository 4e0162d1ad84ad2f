/**
 * The WebSocket upgrades an HTTP server answers on its own port, handed to it as a parameter
 * (src/http/index.ts wires the realtime API and the bridge): the server routes an `upgrade` by its
 * path and knows nothing of what answers it.
 */
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Route } from './route.js';

/** The server an upgrade came through, for a front end that hands requests back to it (the bridge). */
export interface UpgradeShell {
  /** The routes of a path (undefined: none), as the server finds them. */
  routesOf(path: string): readonly Route[] | undefined;
  /**
   * Hands an in-memory connection to the server as an accepted one. It is flagged in-memory
   * (in-memory.ts): it rides on a WebSocket that max_connections counted already.
   */
  inject(socket: Duplex): void;
}

/** Answers an `upgrade` event: admits the socket as a WebSocket, or refuses it with an HTTP answer. */
export type UpgradeHandler = (
  req: IncomingMessage,
  socket: Socket,
  head: Buffer,
  shell: UpgradeShell,
) => void;

export interface Upgrades {
  /** The handler of each path that has its own. */
  readonly paths: ReadonlyMap<string, UpgradeHandler>;
  /** The handler of every other path (it may refuse them all). */
  readonly other: UpgradeHandler;
}
