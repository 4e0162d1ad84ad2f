/** A TTS session: text and voice checks here, synthesis in its own runner process (EngineWorker). */
import { pcm16Audio } from '../../audio/pcm16-audio.js';
import { invalidField, showValue } from '../../errors.js';
import { speakableText, speedOption } from '../engine-options.js';
import { WorkerEngineSession } from '../engine-worker.js';
import { jobFailed } from '../job-error.js';
import { speakSentences } from '../speak-sentences.js';
import type { EngineRequest, EngineResult, RunContext } from '../types.js';
import type { SynthJob, SynthReply } from './synth-worker.js';

export interface VoicePolicy {
  defaultVoice: string;
  /** Throws a 400 naming the voice when it can not be used. */
  check(voice: string): void;
  /** The 400 for a voice the engine reported missing (its reply's code `invalid_voice`). */
  voiceError?(voice: string): Error;
}

export const SYNTH_WORKER_URL = new URL('./synth-worker.js', import.meta.url);

/**
 * Each session runs in a runner process rather than a thread: every request instantiates a 17-34 MB
 * module, and two threads of one process doing that scaled 1.3-1.7x on 2 cores where two processes
 * scaled 1.8-1.9x (measured; see docs/performance.md).
 */
export class SynthSession extends WorkerEngineSession<Omit<SynthJob, 'id'>, SynthReply, VoicePolicy> {
  async run(request: EngineRequest, { signal, onEvent, eventsOnly }: RunContext): Promise<EngineResult> {
    const text = speakableText(request);
    const voices = this.settings;
    const voice = request.voiceId ?? voices.defaultVoice;
    voices.check(voice);
    const speed = speedOption(request.options);
    const audio = await speakSentences(
      text,
      async (sentence) => {
        const reply = await this.worker.call({ text: sentence, voice, speed }, signal);
        if (!reply.ok) {
          if (reply.code === 'invalid_voice')
            throw (
              voices.voiceError?.(voice) ??
              invalidField('voice', `voice: ${showValue(voice)} is not available in this engine`)
            );
          throw jobFailed(reply);
        }
        // flite reads English only: a sentence in another script (say all CJK) gives no samples.
        return pcm16Audio(reply.pcm16, reply.sampleRate, reply.channels);
      },
      onEvent,
      () => 'input: the engine found nothing it can speak in the text (no audio was produced)',
      eventsOnly,
    );
    return audio ? { audio } : {};
  }
}
