/** The timing of an answer: wall time, audio duration and real-time factor (JSON and audio.cpp's headers). */
import { type Audio, durationMs } from '../audio/types.js';

export interface Timing {
  wall_ms: number;
  audio_duration_ms?: number;
  rtf?: number;
}

const round3 = (x: number) => Math.round(x * 1000) / 1000;

export function timing(wallMs: number, audio?: Audio | Audio[]): Timing {
  if (!audio) return { wall_ms: round3(wallMs) };
  // Several files (a batch): their durations add up.
  const audioMs = Array.isArray(audio) ? audio.reduce((sum, a) => sum + durationMs(a), 0) : durationMs(audio);
  return {
    wall_ms: round3(wallMs),
    audio_duration_ms: round3(audioMs),
    rtf: audioMs > 0 ? round3(wallMs / audioMs) : 0,
  };
}

/** The same timing for audio known by its duration alone (an answer kept as PCM16 pieces). */
export function timingFor(wallMs: number, audioMs: number): Timing {
  return {
    wall_ms: round3(wallMs),
    audio_duration_ms: round3(audioMs),
    rtf: audioMs > 0 ? round3(wallMs / audioMs) : 0,
  };
}

/** The X-AudioCPP-* headers, with six decimals as audio.cpp prints them. */
export function timingHeaders(t: Timing): Record<string, string> {
  return {
    'X-AudioCPP-Wall-Ms': t.wall_ms.toFixed(6),
    'X-AudioCPP-Audio-Duration-Ms': (t.audio_duration_ms ?? 0).toFixed(6),
    'X-AudioCPP-RTF': (t.rtf ?? 0).toFixed(6),
  };
}
