/**
 * PCM16 audio as an engine made it (src/audio/pcm16-audio.ts): WAV and PCM encoders send its bytes
 * as they are, byte for byte what the float path gives; its float samples are made only where
 * `floats` asks for them, with the WAV decoder's values; a spread or a structured clone keeps it PCM16.
 */
import assert from 'node:assert/strict';
import { mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { conformAudioAsync, INLINE_LIMIT } from '../../src/audio/audio-pool.js';
import { conformAudio } from '../../src/audio/convert.js';
import { decodeAudio } from '../../src/audio/input.js';
import { decodePcm } from '../../src/audio/pcm.js';
import { asFloat, floats, joinPcm16, pcm16Audio } from '../../src/audio/pcm16-audio.js';
import { frameCount } from '../../src/audio/types.js';
import { decodeWav, readPcm16Wav } from '../../src/audio/wav-decode.js';
import { encodePcm16, encodeWav } from '../../src/audio/wav-encode.js';

const PCM = Int16Array.from({ length: 3000 }, (_, i) =>
  i === 0 ? -32768 : i === 1 ? 32767 : Math.round(20000 * Math.sin(i / 9)),
);

test('encodeWav and encodePcm16 send the PCM16 as it is, the same bytes as the float path, without making floats', () => {
  const audio = pcm16Audio(PCM, 16000, 1);
  const wav = encodeWav(audio);
  const pcm = encodePcm16(audio);
  assert.ok(audio.pcm16, 'encoding did not read the float samples');
  assert.equal(frameCount(audio), 3000);
  const float = { samples: Float32Array.from(PCM, (v) => v / 32768), sampleRate: 16000, channels: 1 };
  assert.ok(wav.equals(encodeWav(float)));
  assert.ok(pcm.equals(encodePcm16(float)));
  assert.deepEqual(floats(decodeWav(wav)), float.samples);
});

test("the kind is in the type: floats() makes the floats where they are asked for, with the WAV decoder's values, and the PCM16 stays; a spread or a structured clone keeps the PCM16", () => {
  const audio = pcm16Audio(PCM, 22050, 2);
  const spread = { ...audio };
  assert.equal(spread.kind, 'pcm16');
  assert.equal(spread.pcm16, PCM, 'a spread carries the PCM16, and makes no floats');
  assert.equal(spread.samples, undefined);
  const samples = floats(audio);
  assert.deepEqual(
    samples,
    Float32Array.from(PCM, (v) => v / 32768),
  );
  assert.equal(audio.pcm16, PCM, 'reading the floats leaves the PCM16 as it was');
  // Floats someone changes are theirs: asFloat's audio sends them, the PCM16 audio still its own.
  const changed = asFloat(audio);
  changed.samples[2] = 0;
  assert.equal(encodePcm16(changed).readInt16LE(4), 0);
  assert.equal(encodePcm16(audio).readInt16LE(4), PCM[2]);
  // A structured clone (a worker thread, a runner) gets the PCM16, not floats.
  const cloned = structuredClone(pcm16Audio(PCM, 8000, 1));
  assert.equal(cloned.kind, 'pcm16');
  assert.deepEqual(cloned.pcm16, PCM);
  // Float audio: its own samples, no copy.
  const float = { samples: new Float32Array(4), sampleRate: 8000, channels: 1 };
  assert.equal(floats(float), float.samples);
  assert.equal(asFloat(float), float);
});

test("readPcm16Wav keeps a 16-bit WAV's samples and converts any other encoding; joinPcm16 joins pieces still as PCM16", () => {
  const wav = encodeWav(pcm16Audio(PCM, 16000, 1));
  const read = readPcm16Wav(wav);
  assert.deepEqual(read.pcm16, PCM);
  assert.equal(read.sampleRate, 16000);
  const float32 = Buffer.alloc(44 + 8);
  float32.write('RIFF', 0);
  float32.writeUInt32LE(44, 4);
  float32.write('WAVEfmt ', 8);
  float32.writeUInt32LE(16, 16);
  float32.writeUInt16LE(3, 20);
  float32.writeUInt16LE(1, 22);
  float32.writeUInt32LE(8000, 24);
  float32.writeUInt32LE(32000, 28);
  float32.writeUInt16LE(4, 32);
  float32.writeUInt16LE(32, 34);
  float32.write('data', 36);
  float32.writeUInt32LE(8, 40);
  float32.writeFloatLE(0.5, 44);
  float32.writeFloatLE(-2, 48);
  assert.deepEqual([...readPcm16Wav(float32).pcm16], [16384, -32768]);
  const joined = joinPcm16([
    pcm16Audio(PCM.subarray(0, 1000), 16000, 1),
    pcm16Audio(PCM.subarray(1000), 16000, 1),
  ]);
  assert.deepEqual(joined?.pcm16, PCM);
  assert.equal(
    joinPcm16([pcm16Audio(PCM, 16000, 1), { samples: new Float32Array(4), sampleRate: 16000, channels: 1 }]),
    undefined,
  );
});

test('a 16-bit upload stays PCM16 from every source (bytes or a file, inline or on the worker), with the floats the decoder made before; a conversion gets the same result', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'voxd-pcm16-'));
  try {
    const short = encodeWav(pcm16Audio(PCM, 16000, 1));
    // Past INLINE_LIMIT: decoded on the worker thread.
    const long = encodeWav(
      pcm16Audio(
        Int16Array.from({ length: INLINE_LIMIT }, (_, i) => PCM[i % 3000]!),
        16000,
        1,
      ),
    );
    const limits = { maxSeconds: 0, maxBytes: 1 << 30 };
    for (const [name, wav] of [
      ['short', short],
      ['long', long],
    ] as const) {
      const old = {
        samples: decodePcm(wav.subarray(44), { float: false, bits: 16, channels: 1 }),
        sampleRate: 16000,
        channels: 1,
      };
      const path = join(dir, `${name}.wav`);
      await writeFile(path, wav);
      const file = await open(path);
      try {
        const sources = { bytes: { bytes: wav }, file: { file, size: wav.length } };
        for (const [kind, source] of Object.entries(sources)) {
          const audio = await decodeAudio(source, 'file', limits);
          assert.ok(audio.pcm16, `${name} ${kind}: PCM16`);
          assert.equal(frameCount(audio), old.samples.length);
          const same = await conformAudioAsync(audio, { sampleRate: 16000, channels: 1 });
          assert.equal(same, audio, 'at the model rate and channels it is passed on as it is');
          assert.deepEqual(floats(audio), floats(old), `${name} ${kind}: the decoder's floats`);
        }
      } finally {
        await file.close();
      }
      // Resampled (on the worker for the long one): the PCM16 goes there, the result is the float path's.
      const need = { sampleRate: 8000, channels: 1 };
      assert.deepEqual(
        floats(await conformAudioAsync(decodeWav(wav), need)),
        floats(conformAudio(old, need)),
      );
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
