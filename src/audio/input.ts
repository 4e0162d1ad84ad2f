/**
 * Input audio from any source a request can give (an upload's bytes or spooled file, a server-local
 * path, base64) within the request's limits, in one call per source: the WAV header is read first
 * (rate, max_audio_seconds) and WAV decoded on the audio worker; anything else goes through ffmpeg
 * when there is one.
 */
import { type FileHandle, mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { invalidField, VoxdError } from '../errors.js';
import { readFully } from '../util/read-fully.js';
import { type FileAccess, openServerFile } from '../util/server-files.js';
import { storageFull } from '../util/storage-full.js';
import { decodeBase64Async, decodeWavAsync, decodeWavFileAsync, INLINE_LIMIT } from './audio-pool.js';
import { base64Bytes } from './base64.js';
import { type Codec, missingFfmpeg } from './ffmpeg.js';
import type { SlotOwner } from './slots.js';
import type { Audio } from './types.js';
import {
  decodeData,
  HEADER_WINDOW,
  parseWavLayout,
  WavEncodingError,
  WavError,
  type WavLayout,
} from './wav-decode.js';

/**
 * What one request's input audio may be, checked from the header before any sample is decoded, and
 * how audio other than WAV is decoded (ffmpeg, stopped when the request's signal aborts).
 */
export interface AudioLimits {
  /** Longest audio in seconds; 0 = no limit. */
  maxSeconds: number;
  /** Largest file or decoded payload in bytes; also the most a compressed input's samples may take. */
  maxBytes: number;
  /** Decodes compressed formats; without it (or without ffmpeg) only WAV is taken. */
  codec?: Codec;
  /** The request's: stops ffmpeg, and takes a WAV decode still waiting for the audio pool out of its queue. */
  signal?: AbortSignal;
  /** Who waits for an ffmpeg child (the request's API key or address), for their fair share. */
  owner?: SlotOwner;
}

/** Whether `head` (a file's first bytes) starts a RIFF/WAVE or RF64 file, which voxd reads itself. */
function isWav(head: Uint8Array): boolean {
  const magic = Buffer.from(head.subarray(0, 4)).toString('latin1');
  return magic === 'RIFF' || magic === 'RF64' || head.byteLength === 0;
}

/** A full temporary folder (or quota) is the server's trouble, a 507, not the client's. */
function storageError(err: unknown, field: string): unknown {
  return storageFull(err, `${field}: the audio could not be stored for ffmpeg`) ?? err;
}

/**
 * Compressed audio decoded by ffmpeg, to mono samples within the limits. A file is read by ffmpeg
 * from its descriptor; bytes in memory go through a temporary file (removed whatever happens),
 * since MP4 and M4A keep their index at the end and cannot be read from a pipe.
 */
async function transcode(source: AudioSource, field: string, limits: AudioLimits): Promise<Audio> {
  const codec = limits.codec;
  if (!codec?.available) throw missingFfmpeg(field);
  const signal = limits.signal ?? new AbortController().signal;
  const decodeLimits = { maxSeconds: limits.maxSeconds, maxBytes: limits.maxBytes, owner: limits.owner };
  if ('file' in source) return codec.decode(source.file.fd, field, decodeLimits, signal);
  let dir: string;
  try {
    dir = await mkdtemp(join(tmpdir(), 'voxd-decode-'));
  } catch (err) {
    throw storageError(err, field);
  }
  try {
    const file = await open(join(dir, 'input'), 'w+', 0o600).catch((err: unknown) => {
      throw storageError(err, field);
    });
    try {
      try {
        await file.writeFile(source.bytes);
      } catch (err) {
        throw storageError(err, field);
      }
      return await codec.decode(file.fd, field, decodeLimits, signal);
    } finally {
      await file.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Input audio not decoded yet: bytes in memory, or an open file (a server file, a spooled upload).
 * `owned`: bytes made for this request alone (a decoded base64 payload, an upload joined in
 * memory), which may be read in place.
 */
export type AudioSource = { bytes: Uint8Array; owned?: boolean } | { file: FileHandle; size: number };

function checkDuration(layout: WavLayout, field: string, maxSeconds: number): void {
  const seconds = layout.frames / layout.format.sampleRate;
  if (maxSeconds > 0 && seconds > maxSeconds) {
    throw new VoxdError(
      'E_AUDIO_TOO_LONG',
      `${field}: the audio is ${Math.ceil(seconds)} s long; the limit is max_audio_seconds=${maxSeconds} (server or model)`,
      { param: field },
    );
  }
}

/** Reads up to `length` bytes at `position`; fewer only at the end of the file. */
async function readAt(file: FileHandle, position: number, length: number): Promise<Buffer> {
  const buffer = Buffer.allocUnsafe(length);
  return buffer.subarray(0, await readFully(file, buffer, position));
}

/**
 * Decodes WAV input within `limits`; a bad file is a 400 naming the field it came in. The header
 * is parsed and the length checked first; long inputs are decoded on a worker thread, and a file's
 * samples are read there piece by piece, so the file is never held in memory whole.
 */
export async function decodeAudio(source: AudioSource, field: string, limits: AudioLimits): Promise<Audio> {
  try {
    const magic = 'bytes' in source ? source.bytes : await readAt(source.file, 0, 12);
    if (!isWav(magic)) return await transcode(source, field, limits);
    if ('bytes' in source) {
      checkDuration(parseWavLayout(source.bytes, source.bytes.byteLength), field, limits.maxSeconds);
      return await decodeWavAsync(source.bytes, source.owned, limits.signal);
    }
    const head = await readAt(source.file, 0, Math.min(source.size, HEADER_WINDOW));
    const layout = parseWavLayout(head, source.size);
    checkDuration(layout, field, limits.maxSeconds);
    if (layout.dataBytes >= INLINE_LIMIT)
      return await decodeWavFileAsync(source.file.fd, layout, limits.signal);
    const data = await readAt(source.file, layout.dataStart, layout.dataBytes);
    if (data.length < layout.dataBytes) throw new WavError('the WAV file ended before its data');
    return decodeData(data, layout.format);
  } catch (err) {
    // A telephony WAV (mu-law, A-law) and the like: ffmpeg reads what voxd's own reader does not.
    if (err instanceof WavEncodingError && limits.codec?.available)
      return await transcode(source, field, limits);
    if (err instanceof WavError) throw invalidField(field, `${field}: ${err.message}`, err);
    throw err;
  }
}

/**
 * A server-local WAV named by a request: relative paths resolve against the config folder, and
 * only regular files under the file roots are read (see server-files.ts). `access` undefined: a
 * path the operator configured.
 */
export async function readAudioPath(
  path: string,
  field: string,
  access: FileAccess | undefined,
  limits: AudioLimits,
): Promise<Audio> {
  const { handle, size } = await openServerFile(path, field, access);
  try {
    if (size > limits.maxBytes)
      throw new VoxdError(
        'E_BODY_TOO_LARGE',
        `${field}: the file is ${size} bytes; the limit is max_request_body_bytes=${limits.maxBytes}`,
        { param: field },
      );
    return await decodeAudio({ file: handle, size }, field, limits);
  } finally {
    await handle.close();
  }
}

/** Base64 WAV (or any container ffmpeg decodes), optionally as a `data:` URI, at most `limits.maxBytes` once decoded. */
export async function decodeBase64Audio(data: string, field: string, limits: AudioLimits): Promise<Audio> {
  return decodeAudio({ bytes: base64Bytes(data, field, limits.maxBytes), owned: true }, field, limits);
}

/**
 * The same from a JSON body's own bytes (the string literal, lifted out of the body before it was
 * parsed: util/json-reader.ts): the text of the payload is made and decoded on the audio
 * worker, so the main thread makes no string of it (issue 27). The answers, errors included, are
 * those of decodeBase64Audio.
 */
export async function decodeBase64Literal(
  literal: Uint8Array,
  movable: boolean,
  field: string,
  limits: AudioLimits,
): Promise<Audio> {
  const bytes = await decodeBase64Async(literal, movable, field, limits.maxBytes, limits.signal);
  return decodeAudio({ bytes, owned: true }, field, limits);
}
