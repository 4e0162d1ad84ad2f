/**
 * Whether a view covers the whole of its ArrayBuffer: memory of its own, which may be moved to a
 * thread (transferred) or read in place without another view seeing it change. A slice of node's
 * shared pool (Buffers under 4 KiB) or of a socket read that holds other bytes too is not.
 */
export function ownsItsMemory(view: ArrayBufferView): view is ArrayBufferView & { buffer: ArrayBuffer } {
  return (
    view.buffer instanceof ArrayBuffer && view.byteOffset === 0 && view.byteLength === view.buffer.byteLength
  );
}
