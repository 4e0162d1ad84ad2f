/** Hand-built WAV files for the HTTP tests, and a reader for the headers voxd writes. */
import assert from 'node:assert/strict';

export interface WavSpec {
  sampleRate: number;
  channels: number;
  /** 8, 16, 24 or 32 (PCM), or 32/64 with `float`. */
  bits: number;
  float?: boolean;
  frames: number;
  /** Sample value in [-1, 1] for a frame and channel. */
  sample: (frame: number, channel: number) => number;
}

/** A canonical 44-byte-header WAV (format 1 = PCM, 3 = IEEE float). */
export function buildWav(spec: WavSpec): Buffer {
  const { channels, bits, frames } = spec;
  const width = bits / 8;
  const dataBytes = frames * channels * width;
  const buf = Buffer.alloc(44 + dataBytes);
  wavHeader(spec, dataBytes).copy(buf);
  let p = 44;
  for (let f = 0; f < frames; f++) {
    for (let c = 0; c < channels; c++) {
      const v = Math.max(-1, Math.min(1, spec.sample(f, c)));
      if (spec.float && bits === 32) buf.writeFloatLE(v, p);
      else if (spec.float) buf.writeDoubleLE(v, p);
      else if (bits === 8) buf.writeUInt8(Math.round(v * 127) + 128, p);
      else if (bits === 16) buf.writeInt16LE(Math.round(v * 32767), p);
      else if (bits === 24) buf.writeIntLE(Math.round(v * 8388607), p, 3);
      else buf.writeInt32LE(Math.round(v * 2147483647), p);
      p += width;
    }
  }
  return buf;
}

/** The 44-byte header of a WAV declaring `dataBytes` of samples (which need not follow). */
export function wavHeader(spec: Omit<WavSpec, 'frames' | 'sample'>, dataBytes: number): Buffer {
  const { sampleRate, channels, bits } = spec;
  const width = bits / 8;
  const buf = Buffer.alloc(44);
  buf.write('RIFF', 0, 'latin1');
  buf.writeUInt32LE(Math.min(36 + dataBytes, 0xffffffff), 4);
  buf.write('WAVE', 8, 'latin1');
  buf.write('fmt ', 12, 'latin1');
  buf.writeUInt32LE(16, 16);
  buf.writeUInt16LE(spec.float ? 3 : 1, 20);
  buf.writeUInt16LE(channels, 22);
  buf.writeUInt32LE(sampleRate, 24);
  buf.writeUInt32LE(sampleRate * channels * width, 28);
  buf.writeUInt16LE(channels * width, 32);
  buf.writeUInt16LE(bits, 34);
  buf.write('data', 36, 'latin1');
  buf.writeUInt32LE(dataBytes, 40);
  return buf;
}

/** A sine of `amplitude` at `frequency` Hz, the same on every channel. */
export function sine(frequency: number, amplitude: number, sampleRate: number) {
  return (frame: number) => amplitude * Math.sin((2 * Math.PI * frequency * frame) / sampleRate);
}

/** A PCM WAV of a sine of `frequency` Hz at `amplitude`, the same on every channel. */
export function sineWav(
  sampleRate: number,
  channels: number,
  bits: number,
  frames: number,
  frequency = 440,
  amplitude = 0.5,
): Buffer {
  return buildWav({ sampleRate, channels, bits, frames, sample: sine(frequency, amplitude, sampleRate) });
}

/** A 16-bit mono WAV of `frames` frames: the shortest way to get a valid upload. */
export function smallWav(frames = 1600, sampleRate = 16000): Buffer {
  return buildWav({ sampleRate, channels: 1, bits: 16, frames, sample: sine(440, 0.5, sampleRate) });
}

export interface WavHeader {
  format: number;
  channels: number;
  sampleRate: number;
  byteRate: number;
  blockAlign: number;
  bits: number;
  dataBytes: number;
}

/**
 * Checks the canonical 44-byte header voxd writes and returns its fields. `sizes`: `exact` for a
 * whole answer (`"stream": false`, JSON), whose RIFF and data sizes count the file; `streamed` for
 * one sent as it is made (a plain request), whose sizes are both 0xFFFFFFFF ("to the end"). Either
 * way `dataBytes` is what the file holds after its header.
 */
export function readWavHeader(buf: Buffer, sizes: 'exact' | 'streamed' = 'exact'): WavHeader {
  assert.ok(buf.length >= 44, `WAV of ${buf.length} bytes is shorter than its header`);
  assert.equal(buf.toString('latin1', 0, 4), 'RIFF');
  if (sizes === 'streamed') {
    assert.equal(buf.readUInt32LE(4), 0xffffffff, 'a streamed WAV declares no RIFF size');
    assert.equal(buf.readUInt32LE(40), 0xffffffff, 'a streamed WAV declares no data size');
  } else assert.equal(buf.readUInt32LE(4), buf.length - 8, 'RIFF size counts everything after itself');
  assert.equal(buf.toString('latin1', 8, 12), 'WAVE');
  assert.equal(buf.toString('latin1', 12, 16), 'fmt ');
  assert.equal(buf.readUInt32LE(16), 16);
  assert.equal(buf.toString('latin1', 36, 40), 'data');
  const header: WavHeader = {
    format: buf.readUInt16LE(20),
    channels: buf.readUInt16LE(22),
    sampleRate: buf.readUInt32LE(24),
    byteRate: buf.readUInt32LE(28),
    blockAlign: buf.readUInt16LE(32),
    bits: buf.readUInt16LE(34),
    dataBytes: sizes === 'streamed' ? buf.length - 44 : buf.readUInt32LE(40),
  };
  assert.equal(header.dataBytes, buf.length - 44, 'data size is the rest of the file');
  return header;
}
