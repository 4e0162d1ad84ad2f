/**
 * An audio exchange of a Wyoming connection: the audio between one audio-start and its audio-stop,
 * addressed to one model (speech recognition, or voice activity when `transcribe` names a VAD
 * model). The connection reads the frames; an exchange turns the audio into the answer's events.
 */
import type { Logger } from 'pino';
import type { ServerConfig } from '../config/types.js';
import type { Runtime } from '../runtime/runtime.js';
import type { ByteLease } from '../session/byte-budget.js';
import type { PcmFormat } from './audio-format.js';

export interface ExchangeContext {
  runtime: Runtime;
  config: ServerConfig;
  log: Logger;
  /**
   * The exchange's own: aborted when it is abandoned (a new audio-start, the client gone, a
   * shutdown) or its deadline passes; its requests are then cancelled and their slots freed.
   */
  signal: AbortSignal;
  /** The exchange's share of the server's byte budget, given back when it ends. */
  bytes: ByteLease;
  /** The rate the audio is converted to as it arrives: the model's. */
  rate: number;
  /** Writes one event to the client (waits while the socket is full). */
  send(type: string, data?: Record<string, unknown>, payload?: Buffer): Promise<void>;
}

export interface AudioExchange {
  readonly kind: 'asr' | 'vad';
  readonly model: string;
  /** Its first events, at audio-start. */
  start?(): Promise<void>;
  /** One audio-chunk's payload in its format; a throw or rejection ends the exchange with an error event. */
  chunk(payload: Buffer, format: PcmFormat): Promise<void>;
  /** The client's audio-stop: the exchange's last events. */
  stop(): Promise<void>;
  /** It is over early: anything still waiting for audio gives up. */
  abandon(reason: Error): void;
}
