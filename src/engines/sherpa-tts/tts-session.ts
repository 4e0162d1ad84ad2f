/** The sherpa-onnx TTS families and their session (any model type): text in, mono audio at the model's rate out. */
import { invalidField, showValue } from '../../errors.js';
import { CpuFamily } from '../cpu-family.js';
import { speakableText, speedOption } from '../engine-options.js';
import { WorkerEngineSession } from '../engine-worker.js';
import { jobFailed } from '../job-error.js';
import { recogniseSpec } from '../sherpa-model-folder.js';
import { speakSentences } from '../speak-sentences.js';
import type { EngineRequest, EngineResult, LoadSpec, ParamRow, RunContext } from '../types.js';
import type { TtsJob, TtsReply } from './tts-worker.js';

const WORKER_URL = new URL('./tts-worker.js', import.meta.url);
const NO_AUDIO_MESSAGE = 'input: the model produced no audio for this text';

/** Maps a request's `voice` to a speaker number, or throws a 400 naming the value. */
export type VoiceResolver = (voice: string | undefined) => number;

/** Speaker numbers only (0, 1, ...): Piper and Matcha voices have no names. */
export const speakerNumber: VoiceResolver = (voice = '0') => {
  if (!/^\d{1,4}$/.test(voice))
    throw invalidField(
      'voice',
      `voice: ${showValue(voice)} is invalid; this model's voices are speaker numbers (0, 1, ...)`,
    );
  return Number(voice);
};

type Job = Omit<TtsJob, 'id'>;

/** What a model's sessions share beyond its OfflineTts config. */
interface TtsSettings {
  /** Speaker numbers unless the model names its voices. */
  voices?: VoiceResolver;
  /** The most tokens the model takes at once, when exceeding it ends the process (Kokoro). */
  maxTokens?: number;
}

/** Its runner holds an OfflineTts built from the family's whole config (its own, or the model's shared one). */
export class SherpaTtsSession extends WorkerEngineSession<Job, TtsReply, TtsSettings> {
  async run(request: EngineRequest, { signal, onEvent, eventsOnly }: RunContext): Promise<EngineResult> {
    const text = speakableText(request);
    const { voices = speakerNumber, maxTokens } = this.settings;
    const sid = voices(request.voiceId);
    const speed = speedOption(request.options);
    let nothing = NO_AUDIO_MESSAGE;
    const audio = await speakSentences(
      text,
      async (sentence) => {
        const reply = await this.worker.call({ text: sentence, sid, speed, maxTokens }, signal);
        if (reply.ok) return { samples: reply.samples, sampleRate: reply.sampleRate, channels: 1 };
        // A sentence the model can say nothing of is skipped; the request fails only if all are.
        if (reply.code === 'no_audio') {
          nothing = reply.message;
          return null;
        }
        throw jobFailed(reply);
      },
      onEvent,
      () => nothing,
      eventsOnly,
    );
    return audio ? { audio } : {};
  }
}

/** How one sherpa TTS model type turns a model folder into an OfflineTts config (and its voices). */
export interface TtsType {
  /** The config `family` name, e.g. `kokoro_tts`. */
  name: string;
  params: readonly ParamRow[];
  /** Finds and checks the folder's files (a 400 naming each problem) and builds the config. */
  setup(spec: LoadSpec): Promise<{ config: unknown } & TtsSettings>;
}

const SPEED_PARAM: ParamRow = {
  name: 'speed',
  type: 'float',
  description: 'speaking rate, 0.25..4',
  default: '1',
};

/**
 * The sherpa-onnx TTS families (Piper, Kokoro, Matcha). By default (isolation "model") one runner
 * holds the model's one OfflineTts and its slots' generateAsync calls run on it concurrently;
 * isolation "session" gives each slot its own runner and OfflineTts.
 */
export class SherpaTtsFamily extends CpuFamily {
  readonly tasks = ['tts'] as const;
  override readonly isolations = ['model', 'session'] as const;
  readonly name: string;
  readonly params: readonly ParamRow[];

  constructor(private readonly type: TtsType) {
    super();
    this.name = type.name;
    this.params = [SPEED_PARAM, ...type.params];
  }

  /** The load's own setup: it finds and checks the files and builds a config, loading nothing. */
  async recognise(dir: string): Promise<string> {
    await this.type.setup({ ...recogniseSpec(dir), task: 'tts' });
    return dir;
  }

  async load(spec: LoadSpec) {
    const { config, ...settings } = await this.type.setup(spec);
    return this.loadedOnRunners(spec, WORKER_URL, config, SherpaTtsSession, settings);
  }
}
