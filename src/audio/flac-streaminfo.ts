/**
 * FLAC's STREAMINFO, filled in after the fact. ffmpeg writes it before the first frame and, on a
 * pipe, cannot seek back to it, so a FLAC made through a pipe declares no length (total samples 0)
 * and no MD5: players and ffprobe then show no duration. A whole answer is held before it is
 * sent, so both fields are written here, from the samples voxd gave the encoder: voxd converts
 * them to 24-bit integers itself (flacInput), so it knows exactly what the FLAC decodes to.
 */
import { createHash } from 'node:crypto';
import { HOST_LITTLE_ENDIAN } from './types.js';

/** The largest 24-bit sample, and the scale a float sample is multiplied by (as PCM16 uses 32768). */
const MAX_24 = 0x7fffff;
const SCALE_24 = 0x800000;

/** One float sample as a 24-bit integer: clamped to [-1, 1] (NaN -> 0), scaled, rounded, capped. */
function toInt24(sample: number): number {
  const clamped = sample > 1 ? 1 : sample >= -1 ? sample : sample < -1 ? -1 : 0;
  return Math.min(MAX_24, Math.round(clamped * SCALE_24));
}

/**
 * The encoder's input: each sample as a 24-bit integer in the top bits of a 32-bit little-endian
 * word (ffmpeg's flac encoder takes s32 and keeps its top 24 bits, so it encodes these exactly).
 */
export function flacInput(samples: Float32Array): Buffer {
  if (HOST_LITTLE_ENDIAN) {
    const words = new Int32Array(samples.length);
    for (let i = 0; i < samples.length; i++) words[i] = toInt24(samples[i]!) * 256;
    return Buffer.from(words.buffer);
  }
  const out = Buffer.allocUnsafe(samples.length * 4);
  for (let i = 0; i < samples.length; i++) out.writeInt32LE(toInt24(samples[i]!) * 256, i * 4);
  return out;
}

/** Samples hashed per piece, so a long answer needs no second copy of itself. */
const MD5_PIECE = 65536;

/** FLAC's MD5 of the decoded audio: the samples interleaved, 3 bytes each, little-endian. */
function samplesMd5(samples: Float32Array): Buffer {
  const hash = createHash('md5');
  const piece = Buffer.allocUnsafe(Math.min(samples.length, MD5_PIECE) * 3);
  for (let start = 0; start < samples.length; start += MD5_PIECE) {
    const end = Math.min(samples.length, start + MD5_PIECE);
    for (let i = start; i < end; i++) piece.writeIntLE(toInt24(samples[i]!), (i - start) * 3, 3);
    hash.update(piece.subarray(0, (end - start) * 3));
  }
  return hash.digest();
}

/** Where STREAMINFO's fields sit in the file: "fLaC", a 4-byte block header, then its 34 bytes. */
const STREAMINFO = 8;
const STREAMINFO_BYTES = 34;
/** The 36-bit total sample count ends the 8 bytes at body offset 10; the MD5 follows. */
const TOTAL_AT = STREAMINFO + 13;
const MD5_AT = STREAMINFO + 18;

/**
 * `flac` (ffmpeg's whole output for `audio`, made from flacInput) with STREAMINFO's total sample
 * count and MD5 written in. Anything but a FLAC that opens with its STREAMINFO is a fault here.
 */
export function withStreamInfo(flac: Buffer, samples: Float32Array, channels: number): Buffer {
  const opens =
    flac.length >= STREAMINFO + STREAMINFO_BYTES &&
    flac.toString('latin1', 0, 4) === 'fLaC' &&
    // Block type 0 (the top bit only says whether more metadata blocks follow), 34 bytes long.
    (flac[4]! & 0x7f) === 0 &&
    flac.readUIntBE(5, 3) === STREAMINFO_BYTES;
  if (!opens) throw new Error('ffmpeg made a FLAC stream that does not open with its STREAMINFO block');
  const frames = samples.length / channels;
  if (!Number.isInteger(frames) || frames >= 2 ** 36)
    throw new RangeError(`cannot write a FLAC sample count of ${frames}`);
  // The count's top 4 bits share a byte with the bits per sample; the low 32 bits follow.
  flac[TOTAL_AT] = (flac[TOTAL_AT]! & 0xf0) | Math.floor(frames / 2 ** 32);
  flac.writeUInt32BE(frames % 2 ** 32, TOTAL_AT + 1);
  samplesMd5(samples).copy(flac, MD5_AT);
  return flac;
}
