#!/usr/bin/env node
/**
 * How fast a .tar.bz2 model package decompresses through the `bzip2 -dc` child process that
 * src/models/unpack.ts uses, against npm libraries that decompress bzip2 in process. Each way runs
 * in a process of its own, so its peak memory (maxRSS) is its own, and reads the whole output as
 * unpack.ts does (a stream it consumes); the event loop's longest stall is measured beside it, since
 * the server keeps serving while a package unpacks. The libraries are not dependencies of voxd:
 * install them into a folder of their own and name it.
 *
 *   npm install --prefix /tmp/bz unbzip2-stream seek-bzip @foxglove/wasm-bz2
 *   node scripts/bench-bzip2.mjs --libs /tmp/bz/node_modules --runs 3 [--archive pkg.tar.bz2 | folder...]
 *
 * Without --archive it packs the folders given (default: the Debian pocketsphinx model, the
 * sherpa-onnx native package and the silero VAD file: weights, binaries and text, about 80 MB)
 * into a temporary .tar.bz2 first. Results: docs/performance.md; the decision: docs/architecture.md.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createReadStream, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const SELF = fileURLToPath(import.meta.url);
const ROOT = resolve(SELF, '..', '..');
const DEFAULT_FOLDERS = [
  '/usr/share/pocketsphinx/model/en-us',
  join(ROOT, 'node_modules', 'sherpa-onnx-linux-x64'),
  join(ROOT, 'assets', 'silero'),
];

/** One way to decompress: resolves with the decompressed byte count. */
const WAYS = {
  /** What unpack.ts does: the child's stdout read as a stream. */
  'bzip2 -dc (child process)': (archive) =>
    new Promise((done, fail) => {
      const child = spawn('bzip2', ['-dc', archive], { stdio: ['ignore', 'pipe', 'inherit'] });
      let bytes = 0;
      child.stdout.on('data', (chunk) => {
        bytes += chunk.length;
      });
      child.on('error', fail);
      child.on('close', (code) => (code === 0 ? done(bytes) : fail(new Error(`bzip2 exited with ${code}`))));
    }),
  /** A Transform stream: decodes each bzip2 block on the main thread as input arrives. */
  'unbzip2-stream': async (archive, libs) => {
    const unbzip2 = createRequire(join(libs, 'noop.js'))('unbzip2-stream');
    // A `through` stream (streams1): not async-iterable, so read by its events.
    return new Promise((done, fail) => {
      let bytes = 0;
      const out = createReadStream(archive).pipe(unbzip2());
      out.on('data', (chunk) => {
        bytes += chunk.length;
      });
      out.on('error', fail);
      out.on('end', () => done(bytes));
    });
  },
  /** Whole buffer in, whole buffer out, synchronously. */
  'seek-bzip': async (archive, libs) => {
    const Bunzip = createRequire(join(libs, 'noop.js'))('seek-bzip');
    return Bunzip.decode(readFileSync(archive)).length;
  },
  /** libbzip2 in WebAssembly: whole buffer in, and the output's size must be known beforehand. */
  '@foxglove/wasm-bz2': async (archive, libs, size) => {
    const Bzip2 = createRequire(join(libs, 'noop.js'))('@foxglove/wasm-bz2');
    const bzip2 = await Bzip2.init();
    return bzip2.decompress(readFileSync(archive), size).length;
  },
};

/** In a child: one way, once; prints {ms, bytes, maxRssMb, maxStallMs} as JSON. */
async function runOne(way, archive, libs, size) {
  // The longest gap between ticks of a 5 ms interval: how long the loop could not serve anything.
  let last = performance.now();
  let maxStallMs = 0;
  const tick = setInterval(() => {
    const now = performance.now();
    maxStallMs = Math.max(maxStallMs, now - last - 5);
    last = now;
  }, 5);
  const start = performance.now();
  const bytes = await WAYS[way](archive, libs, size);
  const ms = performance.now() - start;
  // A synchronous decoder stalls the loop for its whole run: let the interval see it end.
  await new Promise((resolve) => setTimeout(resolve, 20));
  clearInterval(tick);
  process.stdout.write(
    `${JSON.stringify({
      ms,
      bytes,
      maxRssMb: process.resourceUsage().maxRSS / 1024,
      maxStallMs,
    })}\n`,
  );
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

function argValue(args, name, fallback) {
  const at = args.indexOf(name);
  if (at < 0) return fallback;
  const value = args[at + 1];
  args.splice(at, 2);
  return value;
}

async function main() {
  const args = process.argv.slice(2);
  if (args[0] === '--run') return runOne(args[1], args[2], args[3], Number(args[4]));
  const libs = argValue(args, '--libs', join(ROOT, 'node_modules'));
  const runs = Number(argValue(args, '--runs', '3'));
  let archive = argValue(args, '--archive', undefined);
  let scratch;
  if (archive === undefined) {
    const folders = args.length > 0 ? args : DEFAULT_FOLDERS.filter((dir) => existsSync(dir));
    scratch = mkdtempSync(join(tmpdir(), 'voxd-bench-bzip2-'));
    archive = join(scratch, 'package.tar.bz2');
    execFileSync('tar', ['-cjf', archive, ...folders], { stdio: ['ignore', 'ignore', 'inherit'] });
    console.log(`packed ${folders.join(', ')}`);
  }
  try {
    const size = Number(
      execFileSync('sh', ['-c', 'bzip2 -dc "$1" | wc -c', 'sh', archive]).toString().trim(),
    );
    console.log(
      `archive ${(statSync(archive).size / 1e6).toFixed(1)} MB, ${(size / 1e6).toFixed(1)} MB decompressed; node ${process.version}; median of ${runs}`,
    );
    console.log('| way | time (s) | vs bzip2 | peak RSS (MB) | longest event-loop stall (ms) |');
    console.log('|---|---|---|---|---|');
    let baseline;
    for (const way of Object.keys(WAYS)) {
      const results = [];
      try {
        for (let i = 0; i < runs; i++) {
          const out = execFileSync(process.execPath, [SELF, '--run', way, archive, libs, String(size)], {
            stdio: ['ignore', 'pipe', 'pipe'],
            maxBuffer: 1 << 20,
          });
          const result = JSON.parse(out.toString());
          if (result.bytes !== size) throw new Error(`${result.bytes} bytes, expected ${size}`);
          results.push(result);
        }
      } catch (err) {
        console.log(`| ${way} | failed: ${String(err.stderr ?? err.message).split('\n')[0]} | | | |`);
        continue;
      }
      const ms = median(results.map((r) => r.ms));
      baseline ??= ms;
      console.log(
        `| ${way} | ${(ms / 1000).toFixed(2)} | ${(ms / baseline).toFixed(2)}x | ${median(results.map((r) => r.maxRssMb)).toFixed(0)} | ${median(results.map((r) => r.maxStallMs)).toFixed(0)} |`,
      );
    }
  } finally {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  }
}

await main();
