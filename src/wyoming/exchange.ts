/**
 * An audio exchange of a Wyoming connection: the audio between one audio-start and its audio-stop,
 * addressed to one model (speech recognition, or voice activity when `transcribe` names a VAD
 * model). The connection reads the frames; an exchange turns the audio into the answer's events.
 */
import type { Logger } from 'pino';
import type { Audio } from '../audio/types.js';
import type { ServerConfig } from '../config/types.js';
import type { Runtime } from '../runtime/runtime.js';

export interface ExchangeContext {
  runtime: Runtime;
  config: ServerConfig;
  log: Logger;
  /** Aborted when the client goes: the exchange's requests are cancelled and their slots freed. */
  signal: AbortSignal;
  /** Writes one event to the client (waits while the socket is full). */
  send(type: string, data?: Record<string, unknown>, payload?: Buffer): Promise<void>;
}

export interface AudioExchange {
  readonly kind: 'asr' | 'vad';
  readonly model: string;
  /** One audio-chunk's samples; a rejection ends the exchange with an error event. */
  chunk(audio: Audio): void | Promise<void>;
  /** The client's audio-stop: the exchange's last events. */
  stop(): Promise<void>;
  /** The client went: anything still waiting for audio gives up. */
  abandon(reason: Error): void;
}
