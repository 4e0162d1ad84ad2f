// The in-process audio paths a request's input goes through, timed: decoding a ten-minute 16-bit
// WAV and resampling a minute of 44.1 kHz audio to 16 kHz (the speed guards the tests used to assert
// as wall-clock windows; tests now check what comes out, this measures how fast). Prints a Markdown
// table for docs/performance.md: the median and the best of N runs, in ms.
// Usage: npm run build && node scripts/bench-audio.mjs [--runs=N]
import { resample } from '../dist/src/audio/convert.js';
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

const rows = [
  time('decodeWav: 10 min, 16 kHz mono s16 (19.2 MB)', () => decodeWav(tenMinutes)),
  time('resample: 60 s, 44.1 kHz to 16 kHz mono', () =>
    resample({ samples: minute, sampleRate: 44100, channels: 1 }, 16000),
  ),
];
console.log(`| operation (${RUNS} runs) | median ms | best ms |`);
console.log('| --- | --- | --- |');
for (const r of rows) console.log(`| ${r.what} | ${r.median.toFixed(1)} | ${r.best.toFixed(1)} |`);
