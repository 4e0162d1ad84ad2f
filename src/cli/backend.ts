/**
 * What a one-shot command asks of where it runs: in this process (in-process.ts) or on a voxd
 * server (remote.ts). Both answer in the same shapes, so the command prints the same either way.
 */
import type { AudioSource } from '../audio/input.js';
import type { SpeakFormat, TranscribeFormat } from './one-shot-args.js';

/** The audio a command reads: a file's handle, or stdin's bytes; `name` is what messages call it. */
export interface AudioInput {
  name: string;
  source: AudioSource;
}

export interface SpeakJob {
  text: string;
  model?: string;
  voice?: string;
  speed?: number;
  format: SpeakFormat;
}

export interface TranscribeJob {
  model?: string;
  language?: string;
  format: TranscribeFormat;
}

/** A span of the input in seconds; `speaker` only for speaker turns. */
export interface TimedSpan {
  start: number;
  end: number;
  speaker?: number;
}

export type SpanKind = 'diar' | 'vad';

/** Shows what a long job is doing while it runs (a no-op unless stderr is a terminal). */
export interface ProgressSink {
  start(label: string): void;
}

export interface Backend {
  /** The encoded audio. */
  speak(job: SpeakJob, progress: ProgressSink): Promise<Buffer>;
  /** The transcript in the job's format, as the HTTP API answers it. */
  transcribe(input: AudioInput, job: TranscribeJob, progress: ProgressSink): Promise<string>;
  /** Speaker turns (diar) or speech segments (vad), in seconds. */
  spans(
    kind: SpanKind,
    input: AudioInput,
    model: string | undefined,
    progress: ProgressSink,
  ): Promise<TimedSpan[]>;
  /** Ends everything it started (the runtime's engines and runner processes); idempotent. */
  close(): Promise<void>;
  /** Kills what it started at once (Ctrl-C), without waiting. */
  kill(): void;
}

/** Inputs at least this long show a progress line (when stderr is a terminal). */
export const LONG_AUDIO_SECONDS = 30;
export const LONG_TEXT_CHARS = 1000;
/** An upload of this many bytes is long too (about 30 s of 16 kHz 16-bit WAV). */
export const LONG_UPLOAD_BYTES = 1024 * 1024;

const round3 = (x: number) => Math.round(x * 1000) / 1000;

/** Sample positions at `rate` as seconds, rounded to the millisecond. */
export function toSpans(
  positions: readonly { start_sample: number; end_sample: number; speaker_id?: number }[],
  rate: number,
): TimedSpan[] {
  return positions.map((p) => ({
    start: round3(p.start_sample / rate),
    end: round3(p.end_sample / rate),
    ...(p.speaker_id === undefined ? {} : { speaker: p.speaker_id }),
  }));
}
