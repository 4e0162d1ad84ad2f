/**
 * `festival_tts`: English speech with the Festival Speech Synthesis System and its HTS voice
 * cmu_us_slt_arctic_hts (US English, female), from Debian's festival and festvox-us-slt-hts packages,
 * which voxd's set-up installs. Each session owns one Festival child process (festival-process.ts)
 * that speaks one sentence at a time; sessions share nothing but the files on disk.
 */
import { access } from 'node:fs/promises';
import { pcm16Audio } from '../../audio/pcm16-audio.js';
import { readPcm16Wav } from '../../audio/wav-decode.js';
import { invalidField, showValue, VoxdError } from '../../errors.js';
import { CpuFamily } from '../cpu-family.js';
import { speakableText, speedOption } from '../engine-options.js';
import { speakSentences } from '../speak-sentences.js';
import type { EngineRequest, EngineResult, EngineSession, LoadSpec, ParamRow, RunContext } from '../types.js';
import { ALIAS_HINT, OPENAI_VOICES, type VoiceAliasMap } from '../voice-aliases.js';
import { FESTIVAL_BINARY, FESTIVAL_VOICE_FILE, FestivalProcess } from './festival-process.js';

/**
 * Each session is a Festival process holding about 330 MB (its RSS with the voice loaded, 320 MB of
 * it its own heap: measured), counted per slot.
 */
const PROCESS_BYTES = 340 * 1024 * 1024;
const INSTALL_HINT =
  'install the Debian packages festival and festvox-us-slt-hts (npm start and npm test do this as root)';

/** The one voice Debian packages for Festival's HTS engine: slt, US English, female. */
export const FESTIVAL_VOICES = ['slt'] as const;

/** Every OpenAI voice name speaks slt, the only voice. */
export const FESTIVAL_ALIASES: VoiceAliasMap = Object.fromEntries(OPENAI_VOICES.map((name) => [name, 'slt']));

function checkVoice(voice: string): void {
  if (!(FESTIVAL_VOICES as readonly string[]).includes(voice)) {
    throw invalidField('voice', `voice: ${showValue(voice)} is not a festival voice; use slt ${ALIAS_HINT}`);
  }
}

/** True when every sample is zero: Festival's answer to text it cannot read is a short silence. */
function silent(pcm16: Int16Array): boolean {
  for (const x of pcm16) if (x !== 0) return false;
  return true;
}

class FestivalSession implements EngineSession {
  readonly #festival = new FestivalProcess();

  constructor(
    readonly id: string,
    private readonly defaultVoice: string,
  ) {}

  async run(request: EngineRequest, { signal, onEvent, eventsOnly }: RunContext): Promise<EngineResult> {
    const text = speakableText(request);
    checkVoice(request.voiceId ?? this.defaultVoice);
    const speed = speedOption(request.options);
    const audio = await speakSentences(
      text,
      async (sentence) => {
        const wav = await this.#festival.speak(sentence, speed, signal);
        if (wav.length === 0) return null;
        // Festival's own 16-bit samples, kept as they are: a WAV or PCM answer sends them untouched.
        const { pcm16, sampleRate, channels } = readPcm16Wav(wav);
        return silent(pcm16) ? null : pcm16Audio(pcm16, sampleRate, channels);
      },
      onEvent,
      () => 'input: festival found nothing it can speak in the text (it reads English only)',
      eventsOnly,
    );
    return audio ? { audio } : {};
  }

  dispose(): Promise<void> {
    return this.#festival.dispose();
  }
}

export class FestivalFamily extends CpuFamily {
  readonly name = 'festival_tts';
  readonly tasks = ['tts'] as const;
  readonly voiceAliases = FESTIVAL_ALIASES;
  readonly params: readonly ParamRow[] = [
    { name: 'speed', type: 'float', description: 'speaking rate, 0.25..4', default: '1' },
    {
      name: 'voice',
      type: 'enum',
      description: 'Festival HTS voice (cmu_us_slt_arctic_hts)',
      default: 'slt',
      values: [...FESTIVAL_VOICES],
    },
  ];

  async estimateFootprint(_spec: LoadSpec, slots: number): Promise<number> {
    return Math.max(1, slots) * PROCESS_BYTES;
  }

  async load(spec: LoadSpec) {
    for (const file of [FESTIVAL_BINARY, FESTIVAL_VOICE_FILE]) {
      try {
        await access(file);
      } catch {
        throw new VoxdError(
          'E_INVALID_REQUEST',
          `model '${spec.modelId}': ${file} not found; ${INSTALL_HINT}`,
        );
      }
    }
    const defaultVoice = spec.loadOptions['voice'] ?? 'slt';
    checkVoice(defaultVoice);
    return this.loaded(spec, async (id) => new FestivalSession(id, defaultVoice));
  }
}
