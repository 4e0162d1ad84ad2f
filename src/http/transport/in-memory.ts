/**
 * Connections that the server was handed in memory rather than accepted from a client (the
 * WebSocket bridge's requests, src/http/bridge/dispatch.ts): flagged where they are handed over,
 * so that what treats them apart (the connection cap, a plain answer streamed as it is made) asks
 * the flag rather than the stream's class.
 */
const inMemory = new WeakSet<object>();

export function markInMemory(socket: object): void {
  inMemory.add(socket);
}

export function isInMemory(socket: object | null | undefined): boolean {
  return socket != null && inMemory.has(socket);
}
