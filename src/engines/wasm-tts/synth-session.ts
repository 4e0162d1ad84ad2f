/** A TTS session: text and voice checks here, synthesis in its own thread (ThreadSession). */
import { decodeWav } from '../../audio/wav-decode.js';
import { invalidRequest } from '../../errors.js';
import { speakableText, speedOption } from '../engine-options.js';
import { ThreadSession } from '../thread-session.js';
import type { EngineRequest, EngineResult, EngineSession, RunContext } from '../types.js';
import type { SynthJob, SynthReply, SynthWorkerData } from './synth-worker.js';

export interface VoicePolicy {
  defaultVoice: string;
  /** Throws a 400 naming the voice when it can not be used. */
  check(voice: string): void;
  /** Whether an engine error means the voice was not found (a client error, not a fault). */
  isVoiceError(message: string): boolean;
}

const WORKER_URL = new URL('./synth-worker.js', import.meta.url);

export class SynthSession implements EngineSession {
  readonly #thread: ThreadSession<Omit<SynthJob, 'id'>, SynthReply>;

  constructor(
    readonly id: string,
    workerData: SynthWorkerData,
    private readonly voices: VoicePolicy,
  ) {
    this.#thread = new ThreadSession(WORKER_URL, workerData);
  }

  async run(request: EngineRequest, { signal }: RunContext): Promise<EngineResult> {
    const text = speakableText(request);
    const voice = request.voiceId ?? this.voices.defaultVoice;
    this.voices.check(voice);
    const reply = await this.#thread.call({ text, voice, speed: speedOption(request.options) }, signal);
    if (!reply.ok) {
      if (this.voices.isVoiceError(reply.message))
        throw invalidRequest(`voice: "${voice}" is not available in this engine`);
      throw new Error(reply.message);
    }
    const audio = decodeWav(reply.wav);
    // flite reads English only: text in another script (say all CJK) gives a file with no samples.
    if (audio.samples.length === 0)
      throw invalidRequest(
        'input: the engine found nothing it can speak in the text (no audio was produced)',
      );
    return { audio };
  }

  dispose(): Promise<void> {
    return this.#thread.dispose();
  }
}
