/**
 * The engine side of one WASM TTS session (flite or espeak-ng). Both are command-line builds: each
 * request instantiates the module, compiled once per session, and runs its main(), so a session
 * keeps no state between requests and a stuck run can be ended by killing its runner.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WASI } from 'node:wasi';
import { readPcm16Wav } from '../../audio/wav-decode.js';
import { engineData, serveJobs } from '../engine-port.js';
import { JobError, type JobFailure } from '../job-error.js';
import { espeakArgs, fliteArgs } from './synth-args.js';

export interface SynthWorkerData {
  engine: 'flite' | 'espeak';
  /** The .wasm file, compiled when the session starts. */
  wasmPath: string;
  /** espeak-ng's Emscripten loader (a file URL), imported inside the worker. */
  loaderUrl?: string;
}

export interface SynthJob {
  id: number;
  text: string;
  voice: string;
  /** Speaking rate, 1 = normal. */
  speed: number;
}

export type SynthReply =
  | { id: number; ok: true; pcm16: Int16Array; sampleRate: number; channels: number }
  | JobFailure;

const data = engineData<SynthWorkerData>();
const module = await WebAssembly.compile(await readFile(data.wasmPath));

// Emscripten's file system throws an ErrnoError for every path it probes while espeak-ng's
// embedded data is unpacked into it; capturing their stack traces was a third of each request's
// time (profiled). This thread reports errors by message only, so it keeps no stacks.
if (data.engine === 'espeak') Error.stackTraceLimit = 0;

type WasiFn = (...args: unknown[]) => unknown;

/**
 * Node's WASI imports, each behind a plain JS function. Imported directly, V8 may call them through their
 * fast-API entry points; with those, flite writing a long output crashed the whole process with SIGSEGV
 * (test/engines/edge-cases), and behind JS functions it does not. Likely nodejs/node#46777: an import
 * that allocates during a fast call can start a GC there.
 */
function wasiImports(wasi: WASI): WebAssembly.Imports {
  const native = (wasi.getImportObject() as Record<string, Record<string, WasiFn>>)[
    'wasi_snapshot_preview1'
  ]!;
  const wrapped: Record<string, WasiFn> = {};
  for (const [name, fn] of Object.entries(native)) wrapped[name] = (...args) => fn.apply(native, args);
  return { wasi_snapshot_preview1: wrapped };
}

async function flite({ text, voice, speed }: SynthJob): Promise<Uint8Array> {
  const dir = mkdtempSync(join(tmpdir(), 'voxd-flite-'));
  try {
    const args = fliteArgs(text, voice, speed, '/out/x.wav');
    const wasi = new WASI({ version: 'preview1', args, preopens: { '/out': dir }, returnOnExit: true });
    const code = wasi.start(await WebAssembly.instantiate(module, wasiImports(wasi)));
    if (code !== 0) throw new Error(`flite exited with code ${code}`);
    return readFileSync(join(dir, 'x.wav'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

type EspeakModule = { FS: { readFile(path: string): Uint8Array } };
type EspeakFactory = (options: Record<string, unknown>) => Promise<EspeakModule>;
let espeakFactory: EspeakFactory | undefined;

async function espeak({ text, voice, speed }: SynthJob): Promise<Uint8Array> {
  espeakFactory ??= ((await import(data.loaderUrl!)) as { default: EspeakFactory }).default;
  const errors: string[] = [];
  const instance = await espeakFactory({
    arguments: espeakArgs(text, voice, speed, '/o.wav'),
    print() {},
    printErr(line: string) {
      errors.push(line);
    },
    instantiateWasm(imports: WebAssembly.Imports, done: (instance: WebAssembly.Instance) => void) {
      WebAssembly.instantiate(module, imports).then(done);
      return {};
    },
  });
  try {
    return instance.FS.readFile('/o.wav');
  } catch {
    const message = `espeak-ng produced no audio${errors.length ? `: ${errors.join(' ')}` : ''}`;
    // espeak-ng says so on stderr when it has no such voice; only here is its wording known.
    throw errors.some((line) => /voice/i.test(line))
      ? new JobError('invalid_voice', message)
      : new Error(message);
  }
}

serveJobs(async (job: SynthJob) => {
  // The engine's 16-bit samples as it wrote them: 2 bytes a sample through the pipe, and a WAV or
  // PCM answer sends them untouched (pcm16-audio.ts). The header is checked here, off the event loop.
  const wav = await (data.engine === 'flite' ? flite(job) : espeak(job));
  const { sampleRate, channels, pcm16 } = readPcm16Wav(wav);
  return { pcm16, sampleRate, channels };
});
