import { floats } from './pcm16-audio.js';
import { type Audio, HOST_LITTLE_ENDIAN, heldSamples } from './types.js';

/** Size of the canonical RIFF/WAVE header written by encodeWav (RIFF + fmt(16) + data headers). */
export const WAV_HEADER_BYTES = 44;

// Whether typed arrays use little-endian order here; if so PCM16 can be written through an Int16Array
// view (one store per sample) instead of DataView calls.

/** A 16-bit PCM WAV file (44-byte header) holding the audio at its own sample rate and channel count. */
export function encodeWav(audio: Audio): Buffer {
  checkAudio(audio);
  const held = littleEndianPcm16(audio) ?? floats(audio);
  const dataBytes = held.length * 2;
  checkSize(dataBytes);
  const out = new ArrayBuffer(WAV_HEADER_BYTES + dataBytes);
  writeHeader(new DataView(out), audio.sampleRate, audio.channels, dataBytes);
  if (held instanceof Int16Array) new Int16Array(out, WAV_HEADER_BYTES, held.length).set(held);
  else writePcm16(held, out, WAV_HEADER_BYTES);
  return Buffer.from(out);
}

/**
 * The 44-byte header encodeWav writes, for `dataBytes` of PCM16 that follow it: an answer written
 * piece by piece (src/http/routes/speech.ts) sends it first, with the sizes of the whole.
 */
export function wavHeader(sampleRate: number, channels: number, dataBytes: number): Buffer {
  const out = Buffer.alloc(WAV_HEADER_BYTES);
  writeHeader(new DataView(out.buffer, out.byteOffset, WAV_HEADER_BYTES), sampleRate, channels, dataBytes);
  return out;
}

function checkSize(dataBytes: number): void {
  // The RIFF size field is 32 bits and counts everything after itself.
  if (dataBytes + WAV_HEADER_BYTES - 8 > 0xffffffff) {
    throw new RangeError(`audio too long for a WAV file: ${dataBytes} bytes of PCM16 data`);
  }
}

function writeHeader(view: DataView, sampleRate: number, channels: number, dataBytes: number): void {
  checkSize(dataBytes);
  const blockAlign = channels * 2;
  writeAscii(view, 0, 'RIFF');
  view.setUint32(4, WAV_HEADER_BYTES - 8 + dataBytes, true);
  writeAscii(view, 8, 'WAVE');
  writeAscii(view, 12, 'fmt ');
  view.setUint32(16, 16, true); // fmt chunk size for plain PCM
  view.setUint16(20, 1, true); // WAVE_FORMAT_PCM
  view.setUint16(22, channels, true);
  view.setUint32(24, sampleRate, true);
  view.setUint32(28, sampleRate * blockAlign, true); // byte rate
  view.setUint16(32, blockAlign, true);
  view.setUint16(34, 16, true); // bits per sample
  writeAscii(view, 36, 'data');
  view.setUint32(40, dataBytes, true);
}

/** The same PCM16 little-endian samples as encodeWav, without a header (raw `pcm` output). */
export function encodePcm16(audio: Audio): Buffer {
  const pcm16 = littleEndianPcm16(audio);
  // The engine's own bytes, not copied: nothing changes them once made (pcm16-audio.ts).
  if (pcm16) return Buffer.from(pcm16.buffer, pcm16.byteOffset, pcm16.byteLength);
  const samples = floats(audio);
  const out = new ArrayBuffer(samples.length * 2);
  writePcm16(samples, out, 0);
  return Buffer.from(out);
}

/**
 * Converts one float sample to PCM16: clamp to [-1, 1] (NaN -> 0), scale by 32768, round, cap at
 * 32767. 32768 is the scale decoding divides by, so PCM16 from an engine goes out exactly as the
 * engine made it (with 32767, every sample above half scale came back one step smaller).
 */
export function floatToPcm16(sample: number): number {
  // NaN fails every comparison, so it falls through to 0.
  return Math.min(32767, Math.round((sample > 1 ? 1 : sample >= -1 ? sample : sample < -1 ? -1 : 0) * 32768));
}

function writePcm16(samples: Float32Array, out: ArrayBuffer, byteOffset: number): void {
  const n = samples.length;
  if (HOST_LITTLE_ENDIAN) {
    // byteOffset is 0 or 44, both even, so the view is aligned.
    const pcm = new Int16Array(out, byteOffset, n);
    for (let i = 0; i < n; i++) {
      // Same expression as floatToPcm16, inlined: this loop runs once per sample of every response.
      const v = samples[i]!;
      pcm[i] = Math.min(32767, Math.round((v > 1 ? 1 : v >= -1 ? v : v < -1 ? -1 : 0) * 32768));
    }
    return;
  }
  const view = new DataView(out, byteOffset, n * 2);
  for (let i = 0; i < n; i++) view.setInt16(i * 2, floatToPcm16(samples[i]!), true);
}

/** The audio's PCM16 as an engine made it, when there is one and this machine stores it as WAV does. */
function littleEndianPcm16(audio: Audio): Int16Array | undefined {
  return HOST_LITTLE_ENDIAN && audio.kind === 'pcm16' ? audio.pcm16 : undefined;
}

function writeAscii(view: DataView, offset: number, text: string): void {
  for (let i = 0; i < text.length; i++) view.setUint8(offset + i, text.charCodeAt(i));
}

// Encoding bad metadata would produce a WAV no player accepts, so fail loudly at the source instead.
function checkAudio(audio: Audio): void {
  const { channels, sampleRate } = audio;
  if (!Number.isInteger(channels) || channels < 1 || channels > 0xffff) {
    throw new RangeError(`cannot encode WAV: invalid channel count ${channels}`);
  }
  if (!Number.isInteger(sampleRate) || sampleRate < 1 || sampleRate * channels * 2 > 0xffffffff) {
    throw new RangeError(`cannot encode WAV: invalid sample rate ${sampleRate}`);
  }
  const count = heldSamples(audio).length;
  if (count % channels !== 0) {
    throw new RangeError(
      `cannot encode WAV: ${count} samples is not a whole number of ${channels}-channel frames`,
    );
  }
}
