// The in-process audio paths a request's input goes through, timed: decoding a ten-minute 16-bit
// WAV and resampling a minute of 44.1 kHz audio to 16 kHz (the speed guards the tests used to assert
// as wall-clock windows; tests now check what comes out, this measures how fast). Prints a Markdown
// table for docs/performance.md: the median and the best of N runs, in ms.
// Also the one PCM decoder (src/audio/pcm.ts) that the live body, realtime and Wyoming share, with
// Wyoming's own down-mixing loop from before it (inlined below) as the reference for decodePcmMono.
// Usage: npm run build && node scripts/bench-audio.mjs [--runs=N]
import { resample } from '../dist/src/audio/convert.js';
import { decodePcm, decodePcmMono } from '../dist/src/audio/pcm.js';
import { floats, pcm16Audio } from '../dist/src/audio/pcm16-audio.js';
import { decodeWav } from '../dist/src/audio/wav-decode.js';
import { encodeWav } from '../dist/src/audio/wav-encode.js';

const RUNS = Number(process.argv.find((a) => a.startsWith('--runs='))?.slice(7) ?? 7);

function time(what, fn) {
  fn(); // warm-up: the first run also compiles
  const ms = [];
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    fn();
    ms.push(performance.now() - started);
  }
  ms.sort((a, b) => a - b);
  return { what, median: ms[Math.floor(ms.length / 2)], best: ms[0] };
}

const tenMinutes = encodeWav({
  samples: new Float32Array(16000 * 600).fill(0.25),
  sampleRate: 16000,
  channels: 1,
});
const minute = new Float32Array(44100 * 60);
for (let i = 0; i < minute.length; i++) minute[i] = 0.5 * Math.sin((2 * Math.PI * 440 * i) / 44100);

/** Wyoming's decodeMono before the one decoder (src/wyoming/audio-format.ts at 132ed4c^), for comparison. */
function wyomingMonoBefore(payload, width, channels) {
  const frames = payload.length / (width * channels);
  const out = new Float32Array(frames);
  const view = new DataView(payload.buffer, payload.byteOffset, payload.length);
  for (let f = 0, at = 0; f < frames; f++) {
    let sum = 0;
    for (let c = 0; c < channels; c++, at += width)
      sum +=
        width === 2
          ? view.getInt16(at, true) / 32768
          : width === 3
            ? ((view.getInt8(at + 2) << 16) | view.getUint16(at, true)) / 8388608
            : Math.fround(view.getInt32(at, true) / 2147483648);
    out[f] = sum / channels;
  }
  return out;
}

const s16 = tenMinutes.subarray(44);
const pcm16 = pcm16Audio(new Int16Array(16000 * 600).fill(8192), 16000, 1);
// A minute of Wyoming's widest format in chunks of 0.1 s: 48 kHz, 8 channels, 32-bit.
const wide = new Uint8Array(4800 * 8 * 4).map((_, i) => (i * 7919) & 0xff);
const wideMinute = (decode) => {
  for (let i = 0; i < 600; i++) decode(wide);
};

const narrow = new Uint8Array(1600 * 2).map((_, i) => (i * 7919) & 0xff);
const narrowMinute = (decode) => {
  for (let i = 0; i < 600; i++) decode(narrow);
};

const rows = [
  time('decodePcm: 10 min, 16 kHz mono s16 to floats (live body, realtime)', () =>
    decodePcm(s16, { bits: 16, float: false, channels: 1 }),
  ),
  time('floats(pcm16 audio): 10 min, 16 kHz mono', () => floats(pcm16)),
  time('decodePcmMono: 60 s, 48 kHz, 8 ch, 32-bit, in 0.1 s chunks (Wyoming)', () =>
    wideMinute((chunk) => decodePcmMono(chunk, { bits: 32, float: false, channels: 8 })),
  ),
  time('before: Wyoming decodeMono, the same 60 s', () =>
    wideMinute((chunk) => wyomingMonoBefore(chunk, 4, 8)),
  ),
  time('decodePcmMono: 60 s, 16 kHz mono s16, in 0.1 s chunks (Wyoming as Home Assistant sends it)', () =>
    narrowMinute((chunk) => decodePcmMono(chunk, { bits: 16, float: false, channels: 1 })),
  ),
  time('before: Wyoming decodeMono, the same 60 s', () =>
    narrowMinute((chunk) => wyomingMonoBefore(chunk, 2, 1)),
  ),
  time('decodeWav: 10 min, 16 kHz mono s16 (19.2 MB)', () => decodeWav(tenMinutes)),
  time('resample: 60 s, 44.1 kHz to 16 kHz mono', () =>
    resample({ samples: minute, sampleRate: 44100, channels: 1 }, 16000),
  ),
];
console.log(`| operation (${RUNS} runs) | median ms | best ms |`);
console.log('| --- | --- | --- |');
for (const r of rows) console.log(`| ${r.what} | ${r.median.toFixed(1)} | ${r.best.toFixed(1)} |`);
