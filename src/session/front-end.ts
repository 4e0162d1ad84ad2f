/**
 * What the composition root (src/app.ts) asks of every front end (HTTP, the realtime and bridge
 * WebSockets, Wyoming) at a shutdown: the one lifecycle they share, composed there and nowhere else.
 */
export interface FrontEnd {
  /**
   * Takes no new work, lets the work in progress end (each front end's own way: a response, a
   * turn, an exchange), then closes; resolves once its connections have ended.
   */
  drain(): Promise<void>;
  /** Drops every connection now (a shutdown's deadline): stalled I/O cannot hold the process open. */
  cut(): void;
}
