import assert from 'node:assert/strict';
import { test } from 'node:test';
import { floats } from '../../src/audio/pcm16-audio.js';
import type { Audio } from '../../src/audio/types.js';
import { durationMs } from '../../src/audio/types.js';
import { decodeWav, WavError } from '../../src/audio/wav-decode.js';
import { encodePcm16, encodeWav } from '../../src/audio/wav-encode.js';
import { mulberry32 } from '../helpers/prng.js';

// ---- helpers for hand-built files ----

/** A RIFF/WAVE file from [id, body] chunks, odd bodies padded as the spec says. */
function riff(chunks: Array<[string, Buffer]>, riffSize?: number): Buffer {
  const parts: Buffer[] = [];
  for (const [id, body] of chunks) {
    const head = Buffer.alloc(8);
    head.write(id, 0, 'latin1');
    head.writeUInt32LE(body.length, 4);
    parts.push(head, body);
    if (body.length % 2) parts.push(Buffer.alloc(1));
  }
  const payload = Buffer.concat(parts);
  const head = Buffer.alloc(12);
  head.write('RIFF', 0, 'latin1');
  head.writeUInt32LE(riffSize ?? payload.length + 4, 4);
  head.write('WAVE', 8, 'latin1');
  return Buffer.concat([head, payload]);
}

function fmt(format: number, channels: number, rate: number, bits: number): Buffer {
  const b = Buffer.alloc(16);
  b.writeUInt16LE(format, 0);
  b.writeUInt16LE(channels, 2);
  b.writeUInt32LE(rate, 4);
  b.writeUInt32LE((rate * channels * bits) / 8, 8);
  b.writeUInt16LE((channels * bits) / 8, 12);
  b.writeUInt16LE(bits, 14);
  return b;
}

const GUID_TAIL = [0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71];

function fmtExtensible(subformat: number, channels: number, rate: number, bits: number, validBits = bits) {
  const b = Buffer.alloc(40);
  fmt(0xfffe, channels, rate, bits).copy(b);
  b.writeUInt16LE(22, 16); // cbSize
  b.writeUInt16LE(validBits, 18);
  b.writeUInt32LE(channels === 2 ? 3 : 4, 20); // channel mask
  b.writeUInt32LE(subformat, 24);
  Buffer.from(GUID_TAIL).copy(b, 28);
  return b;
}

function i16(...v: number[]): Buffer {
  const b = Buffer.alloc(v.length * 2);
  v.forEach((x, i) => {
    b.writeInt16LE(x, i * 2);
  });
  return b;
}

function assertClose(actual: Float32Array, expected: number[], eps = 1e-7): void {
  assert.equal(actual.length, expected.length, `length ${actual.length} != ${expected.length}`);
  expected.forEach((e, i) => {
    assert.ok(Math.abs(actual[i]! - e) <= eps, `sample ${i}: ${actual[i]} != ${e}`);
  });
}

function assertWavError(input: Buffer, pattern: RegExp | string): void {
  assert.throws(
    () => decodeWav(input),
    (err: unknown) => {
      assert.ok(err instanceof WavError, `expected WavError, got ${String(err)}`);
      assert.equal(err.name, 'WavError');
      if (typeof pattern === 'string') assert.equal(err.message, pattern);
      else assert.match(err.message, pattern);
      return true;
    },
  );
}

// ---- encoding ----

test('encode then decode returns the same samples to PCM16 precision', () => {
  const frames = 1000;
  const samples = new Float32Array(frames * 2);
  for (let i = 0; i < frames; i++) {
    samples[2 * i] = Math.sin(i / 10) * 0.9;
    samples[2 * i + 1] = Math.cos(i / 7) * 0.5;
  }
  const audio: Audio = { samples, sampleRate: 22050, channels: 2 };
  const back = decodeWav(encodeWav(audio));
  assert.equal(back.sampleRate, 22050);
  assert.equal(back.channels, 2);
  assert.equal(floats(back).length, samples.length);
  // Both directions scale by 32768 (so -32768 maps to -1): the round trip is off by at most half a
  // step of rounding, or one step where +1 is capped at 32767.
  for (let i = 0; i < samples.length; i++) {
    assert.ok(Math.abs(floats(back)[i]! - samples[i]!) <= 1.5 / 32768 + 1e-7, `sample ${i}`);
  }
  assert.ok(Math.abs(durationMs(back) - (frames / 22050) * 1000) < 1e-9);
});

test('PCM16 decoded and encoded again is every sample as it was (engine output passes unchanged)', () => {
  const all = Buffer.alloc(65536 * 2);
  for (let v = -32768; v <= 32767; v++) all.writeInt16LE(v, (v + 32768) * 2);
  const wav = encodeWav({ samples: new Float32Array(0), sampleRate: 16000, channels: 1 });
  const input = Buffer.concat([wav.subarray(0, 40), Buffer.alloc(4), all]);
  input.writeUInt32LE(all.length, 40);
  input.writeUInt32LE(input.length - 8, 4);
  assert.deepEqual(encodePcm16(decodeWav(input)), all);
});

test('PCM16 conversion clamps, scales by 32768, rounds and caps at 32767', () => {
  const samples = new Float32Array([1.5, -1.5, 0.5, Number.NaN, -0.5, 1, -1, 0, Infinity, -Infinity]);
  const pcm = encodePcm16({ samples, sampleRate: 16000, channels: 1 });
  assert.equal(pcm.length, samples.length * 2);
  const values = Array.from({ length: samples.length }, (_, i) => pcm.readInt16LE(i * 2));
  assert.deepEqual(values, [32767, -32768, 16384, 0, -16384, 32767, -32768, 0, 32767, -32768]);
  // encodeWav writes the very same bytes after its header.
  assert.deepEqual(encodeWav({ samples, sampleRate: 16000, channels: 1 }).subarray(44), pcm);
});

test('WAV header fields', () => {
  const audio: Audio = { samples: new Float32Array(20), sampleRate: 22050, channels: 2 };
  const wav = encodeWav(audio);
  assert.equal(wav.length, 44 + 40);
  assert.equal(wav.toString('latin1', 0, 4), 'RIFF');
  assert.equal(wav.readUInt32LE(4), 36 + 40);
  assert.equal(wav.toString('latin1', 8, 16), 'WAVEfmt ');
  assert.equal(wav.readUInt32LE(16), 16);
  assert.equal(wav.readUInt16LE(20), 1); // PCM
  assert.equal(wav.readUInt16LE(22), 2); // channels
  assert.equal(wav.readUInt32LE(24), 22050);
  assert.equal(wav.readUInt32LE(28), 22050 * 4); // byte rate
  assert.equal(wav.readUInt16LE(32), 4); // block align
  assert.equal(wav.readUInt16LE(34), 16);
  assert.equal(wav.toString('latin1', 36, 40), 'data');
  assert.equal(wav.readUInt32LE(40), 40);
});

test('encodeWav rejects audio it cannot describe', () => {
  assert.throws(
    () => encodeWav({ samples: new Float32Array(3), sampleRate: 16000, channels: 2 }),
    RangeError,
  );
  assert.throws(() => encodeWav({ samples: new Float32Array(2), sampleRate: 0, channels: 1 }), RangeError);
  assert.throws(
    () => encodeWav({ samples: new Float32Array(2), sampleRate: 16000, channels: 0 }),
    RangeError,
  );
});

test('empty audio encodes to a header-only WAV that decodes to no samples', () => {
  const back = decodeWav(encodeWav({ samples: new Float32Array(0), sampleRate: 8000, channels: 1 }));
  assert.equal(floats(back).length, 0);
  assert.equal(back.sampleRate, 8000);
  assert.equal(durationMs(back), 0);
});

// ---- decoding each format ----

test('decodes 8-bit unsigned PCM', () => {
  const audio = decodeWav(
    riff([
      ['fmt ', fmt(1, 1, 8000, 8)],
      ['data', Buffer.from([0, 128, 255, 64])],
    ]),
  );
  assert.equal(audio.sampleRate, 8000);
  assertClose(floats(audio), [-1, 0, 127 / 128, -0.5]);
});

test('decodes 16-bit PCM', () => {
  const audio = decodeWav(
    riff([
      ['fmt ', fmt(1, 1, 16000, 16)],
      ['data', i16(-32768, 0, 32767, 16384)],
    ]),
  );
  assertClose(floats(audio), [-1, 0, 32767 / 32768, 0.5]);
});

test('decodes 24-bit PCM with sign extension', () => {
  const data = Buffer.from([
    0x00, 0x00, 0x00, 0xff, 0xff, 0x7f, 0x00, 0x00, 0x80, 0xff, 0xff, 0xff, 0x00, 0x00, 0x40, 0x00, 0x00,
    0xc0,
  ]);
  const audio = decodeWav(
    riff([
      ['fmt ', fmt(1, 1, 48000, 24)],
      ['data', data],
    ]),
  );
  assertClose(floats(audio), [0, 8388607 / 8388608, -1, -1 / 8388608, 0.5, -0.5]);
});

test('decodes 32-bit PCM', () => {
  const data = Buffer.alloc(12);
  data.writeInt32LE(-2147483648, 0);
  data.writeInt32LE(1073741824, 4);
  data.writeInt32LE(-1, 8);
  const audio = decodeWav(
    riff([
      ['fmt ', fmt(1, 1, 44100, 32)],
      ['data', data],
    ]),
  );
  assertClose(floats(audio), [-1, 0.5, -1 / 2147483648]);
});

test('decodes 32-bit float, clamping out-of-range and NaN', () => {
  const data = Buffer.alloc(20);
  [0.25, -0.75, 1.5, Number.NaN, -2].forEach((v, i) => {
    data.writeFloatLE(v, i * 4);
  });
  const audio = decodeWav(
    riff([
      ['fmt ', fmt(3, 1, 16000, 32)],
      ['data', data],
    ]),
  );
  assertClose(floats(audio), [0.25, -0.75, 1, 0, -1]);
});

test('decodes 64-bit float', () => {
  const data = Buffer.alloc(24);
  [0.125, -0.5, 0.3].forEach((v, i) => {
    data.writeDoubleLE(v, i * 8);
  });
  const audio = decodeWav(
    riff([
      ['fmt ', fmt(3, 1, 16000, 64)],
      ['data', data],
    ]),
  );
  assertClose(floats(audio), [0.125, -0.5, 0.3]);
});

test('decodes WAVE_FORMAT_EXTENSIBLE PCM (20 valid bits in 24) and float', () => {
  const pcm = decodeWav(
    riff([
      ['fmt ', fmtExtensible(1, 2, 96000, 24, 20)],
      ['data', Buffer.from([0x00, 0x00, 0x40, 0x00, 0x00, 0xc0])],
    ]),
  );
  assert.equal(pcm.channels, 2);
  assert.equal(pcm.sampleRate, 96000);
  assertClose(floats(pcm), [0.5, -0.5]);

  const data = Buffer.alloc(8);
  data.writeFloatLE(0.5, 0);
  data.writeFloatLE(-0.25, 4);
  const float = decodeWav(
    riff([
      ['fmt ', fmtExtensible(3, 1, 16000, 32)],
      ['data', data],
    ]),
  );
  assertClose(floats(float), [0.5, -0.25]);
});

test('decodes stereo interleaved', () => {
  const audio = decodeWav(
    riff([
      ['fmt ', fmt(1, 2, 44100, 16)],
      ['data', i16(16384, -16384, 8192, -8192)],
    ]),
  );
  assert.equal(audio.channels, 2);
  assertClose(floats(audio), [0.5, -0.5, 0.25, -0.25]);
});

test('skips unknown and odd-sized chunks (LIST, fact) and reads data before fmt', () => {
  const list = Buffer.from('INFOx', 'latin1'); // 5 bytes: followed by one pad byte
  const wav = riff([
    ['LIST', list],
    ['fmt ', fmt(1, 1, 16000, 16)],
    ['fact', Buffer.from([1, 0, 0])],
    ['data', i16(8192, -8192)],
    ['LIST', list],
  ]);
  assertClose(floats(decodeWav(wav)), [0.25, -0.25]);

  const dataFirst = riff([
    ['data', i16(8192)],
    ['fmt ', fmt(1, 1, 16000, 16)],
  ]);
  assertClose(floats(decodeWav(dataFirst)), [0.25]);
});

test('a streamed WAV (sizes 0xFFFFFFFF) is truncated to the whole frames present', () => {
  const body = Buffer.concat([i16(16384, -16384, 8192), Buffer.from([0x01])]); // 1.5 stereo frames + 1 byte
  const wav = riff([
    ['fmt ', fmt(1, 2, 16000, 16)],
    ['data', body],
  ]);
  wav.writeUInt32LE(0xffffffff, 4);
  wav.writeUInt32LE(0xffffffff, 12 + 8 + 16 + 4);
  const audio = decodeWav(wav.subarray(0, wav.length - 1)); // drop the pad byte riff() added
  assertClose(floats(audio), [0.5, -0.5]);
});

test('decodes from a Uint8Array view at a non-zero offset', () => {
  const wav = riff([
    ['fmt ', fmt(1, 1, 16000, 16)],
    ['data', i16(16384, -8192)],
  ]);
  const backing = new Uint8Array(wav.length + 3);
  backing.set(wav, 3);
  assertClose(floats(decodeWav(backing.subarray(3))), [0.5, -0.25]);
});

// ---- errors ----

test('each malformed or unsupported input gives a WavError saying what it is, never quoting its bytes', () => {
  const good = fmt(1, 1, 16000, 16);
  const data: [string, Buffer] = ['data', i16(0)];

  assertWavError(
    Buffer.from('ID3\x03\x00\x00\x00\x00\x00\x00\x00\x00', 'latin1'),
    'not a WAV file: it looks like MP3 or AAC; only WAV audio is supported',
  );
  assertWavError(Buffer.from('OggS\x00\x02', 'latin1'), /looks like Ogg/);
  assertWavError(Buffer.from('fLaC\x00\x00', 'latin1'), /looks like FLAC/);
  assertWavError(Buffer.from('\x00\x00\x00\x20ftypM4A ', 'latin1'), /looks like MP4/);
  assertWavError(Buffer.from('\x1a\x45\xdf\xa3', 'latin1'), /looks like WebM/);
  assertWavError(Buffer.alloc(0), 'not a WAV file: it is empty');
  assertWavError(Buffer.from('root:x:0:0', 'latin1'), 'not a WAV file: no "RIFF" header');
  assertWavError(
    Buffer.from('RIFF\x00\x00', 'latin1'),
    'truncated WAV header: got 6 bytes, need at least 12',
  );
  assertWavError(
    Buffer.from('RIFF\x00\x00\x00\x00AVI LIST', 'latin1'),
    'not a WAV file: a RIFF file whose form type is not "WAVE"',
  );
  assertWavError(Buffer.from('RF64\xff\xff\xff\xffWAVE', 'latin1'), /RF64/);

  assertWavError(
    riff([['fmt ', fmt(0x55, 2, 44100, 0)], data]),
    'unsupported WAV encoding: format 0x0055 (MP3); supported: PCM 8/16/24/32-bit and IEEE float 32/64-bit',
  );
  assertWavError(
    riff([['fmt ', fmt(0x1234, 1, 8000, 8)], data]),
    /^unsupported WAV encoding: format 0x1234;/,
  );
  assertWavError(
    riff([['fmt ', fmt(1, 1, 16000, 12)], data]),
    /^unsupported WAV: 12 bits per sample \(PCM\)/,
  );
  assertWavError(
    riff([['fmt ', fmt(3, 1, 16000, 16)], data]),
    /^unsupported WAV: 16 bits per sample \(IEEE float\)/,
  );
  assertWavError(
    riff([['fmt ', fmtExtensible(0x55, 1, 16000, 16)], data]),
    /format 0x0055 \(MP3\) in WAVE_FORMAT_EXTENSIBLE/,
  );
  const oddGuid = fmtExtensible(1, 1, 16000, 16);
  oddGuid[30] = 0x11;
  assertWavError(
    riff([['fmt ', oddGuid], data]),
    /^unsupported WAV encoding: extensible subformat \{00000001-0000-0011-8000-00aa00389b71\}/,
  );
  assertWavError(
    riff([['fmt ', fmtExtensible(1, 1, 16000, 16).subarray(0, 24)], data]),
    /truncated WAV fmt chunk: WAVE_FORMAT_EXTENSIBLE needs 40 bytes, got 24/,
  );

  assertWavError(riff([['fmt ', good]]), 'WAV has no data chunk');
  assertWavError(riff([['LIST', Buffer.alloc(4)], data]), 'WAV has no fmt chunk');
  assertWavError(riff([['fmt ', fmt(1, 0, 16000, 16)], data]), 'WAV fmt chunk declares 0 channels');
  for (const rate of [0, 1, 999, 384_001, 5_000_000])
    assertWavError(
      riff([['fmt ', fmt(1, 1, rate, 16)], data]),
      `unsupported WAV: sample rate ${rate} Hz; expected 1000..384000 Hz`,
    );
  for (const rate of [1000, 384_000])
    assert.equal(decodeWav(riff([['fmt ', fmt(1, 1, rate, 16)], data])).sampleRate, rate);
  assertWavError(
    riff([['fmt ', good.subarray(0, 10)], data]),
    'truncated WAV fmt chunk: 10 bytes, need at least 16',
  );
  // A fmt chunk cut off by the end of the file.
  assertWavError(
    riff([['fmt ', good]]).subarray(0, 30),
    'truncated WAV fmt chunk: 10 bytes, need at least 16',
  );
});

function decodesOrWavError(input: Uint8Array, label: string): void {
  let audio: Audio;
  try {
    audio = decodeWav(input);
  } catch (err) {
    assert.ok(err instanceof WavError, `${label}: threw ${String(err)}`);
    return;
  }
  assert.ok(audio.channels >= 1 && audio.sampleRate >= 1, label);
  assert.equal(floats(audio).length % audio.channels, 0, label);
  for (const s of floats(audio)) assert.ok(s >= -1 && s <= 1, `${label}: sample ${s}`);
}

test('random and mutated bytes never throw anything but WavError', () => {
  const rand = mulberry32(0x5eed);
  const byte = () => Math.floor(rand() * 256);
  // Pure garbage, sometimes starting with a valid RIFF/WAVE prefix so the chunk walker is reached.
  for (let n = 0; n < 200; n++) {
    const buf = Buffer.alloc(Math.floor(rand() * 120));
    for (let i = 0; i < buf.length; i++) buf[i] = byte();
    if (n % 2 && buf.length >= 12) buf.write('RIFF', 0, 'latin1');
    if (n % 2 && buf.length >= 12) buf.write('WAVE', 8, 'latin1');
    decodesOrWavError(buf, `garbage #${n}`);
  }
  // Valid files of every format with random bytes changed in the header, then cut at a random length.
  const formats: Buffer[] = [
    fmt(1, 1, 8000, 8),
    fmt(1, 2, 16000, 16),
    fmt(1, 1, 48000, 24),
    fmt(1, 3, 44100, 32),
    fmt(3, 1, 16000, 32),
    fmt(3, 2, 16000, 64),
    fmtExtensible(1, 2, 48000, 24, 20),
    fmtExtensible(3, 1, 16000, 32),
  ];
  for (let n = 0; n < 400; n++) {
    const payload = Buffer.alloc(Math.floor(rand() * 64));
    for (let i = 0; i < payload.length; i++) payload[i] = byte();
    const wav = riff([
      ['LIST', Buffer.from('INFO!', 'latin1')],
      ['fmt ', formats[n % formats.length]!],
      ['data', payload],
    ]);
    const flips = 1 + Math.floor(rand() * 4);
    for (let f = 0; f < flips; f++) wav[Math.floor(rand() * Math.min(wav.length, 80))] = byte();
    decodesOrWavError(wav.subarray(0, Math.floor(rand() * (wav.length + 1))), `mutated #${n}`);
  }
});

// How fast: `node scripts/bench-audio.mjs` (docs/performance.md); a test asserts what comes out.
test('a ten-minute 16-bit file decodes whole, every sample', () => {
  const frames = 16000 * 60 * 10;
  const wav = encodeWav({ samples: new Float32Array(frames).fill(0.25), sampleRate: 16000, channels: 1 });
  const audio = decodeWav(wav);
  assert.equal(floats(audio).length, frames);
  const expected = Math.round(0.25 * 32767) / 32768;
  const off = floats(audio).findIndex((v) => Math.abs(v - expected) > 1e-6);
  assert.equal(off, -1, `sample ${off} is ${floats(audio)[off]}`);
});
