/** Audio in (WAV from a server path, an upload or base64) and out (WAV, PCM, timing) for the routes. */
import { readFile } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import { decodeWavAsync } from '../audio/audio-pool.js';
import type { Audio } from '../audio/types.js';
import { durationMs } from '../audio/types.js';
import { WavError } from '../audio/wav-decode.js';
import { invalidRequest, showValue } from '../errors.js';

/** Decodes WAV bytes (long files on a worker thread); a bad file is a 400 naming the field it came in. */
export async function decodeField(bytes: Buffer, field: string): Promise<Audio> {
  try {
    return await decodeWavAsync(bytes);
  } catch (err) {
    if (err instanceof WavError) throw invalidRequest(`${field}: ${err.message}`, err);
    throw err;
  }
}

/** A server-local WAV path, relative paths resolved against the config folder. */
export async function readAudioPath(path: string, field: string, baseDir: string): Promise<Audio> {
  const full = isAbsolute(path) ? path : resolve(baseDir, path);
  let bytes: Buffer;
  try {
    bytes = await readFile(full);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw invalidRequest(
      `${field}: cannot read ${showValue(path)} (${code === 'ENOENT' ? 'no such file' : (code ?? 'unreadable')})`,
    );
  }
  return decodeField(bytes, field);
}

const BASE64 = /^[A-Za-z0-9+/\s]*={0,2}\s*$/;

/** Base64 WAV, optionally as a `data:` URI, at most `maxBytes` once decoded. */
export async function decodeBase64Audio(data: string, field: string, maxBytes: number): Promise<Audio> {
  const payload = data.startsWith('data:') ? data.slice(data.indexOf(',') + 1) : data;
  if (payload.trim().length === 0) throw invalidRequest(`${field}: the base64 payload is empty`);
  if (!BASE64.test(payload)) throw invalidRequest(`${field}: not valid base64`);
  const bytes = Buffer.from(payload, 'base64');
  if (bytes.length > maxBytes)
    throw invalidRequest(`${field}: decoded audio is ${bytes.length} bytes; the limit is ${maxBytes}`);
  return decodeField(bytes, field);
}

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

/** The X-AudioCPP-* headers, with six decimals as audio.cpp prints them. */
export function timingHeaders(t: Timing): Record<string, string> {
  return {
    'X-AudioCPP-Wall-Ms': t.wall_ms.toFixed(6),
    'X-AudioCPP-Audio-Duration-Ms': (t.audio_duration_ms ?? 0).toFixed(6),
    'X-AudioCPP-RTF': (t.rtf ?? 0).toFixed(6),
  };
}
