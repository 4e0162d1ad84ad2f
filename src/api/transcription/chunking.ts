/**
 * How a long upload is cut into chunks at its silences (`chunking_strategy`): what the request
 * parser reads and the chunked transcription runs, in a module of its own so that neither imports
 * the other.
 */

export interface ChunkingStrategy {
  /** Audio kept before and after each chunk's speech, so no word is cut at its edge. */
  prefixPaddingMs: number;
  /** A silence at least this long separates two speech regions (and so may end a chunk). */
  silenceDurationMs: number;
  /** The VAD's speech probability threshold. */
  threshold: number;
  /** Speech regions are merged into one chunk until it would be longer than this. */
  maxChunkMs: number;
}

/** `"auto"`, and the values a `server_vad` object leaves out. 30 s is what Whisper takes at once. */
export const AUTO_CHUNKING: ChunkingStrategy = {
  prefixPaddingMs: 300,
  silenceDurationMs: 500,
  threshold: 0.5,
  maxChunkMs: 30_000,
};
