/**
 * One look of a stream's speech detector: the server's VAD model run like any request (its FIFO,
 * its slots, management barriers) over a window of mono samples, answered as speech spans.
 */
import type { Runtime } from '../../runtime/runtime.js';
import type { Probe } from './speech-detector.js';
import { vadRequest } from './vad-model.js';

export function vadProbe(runtime: Runtime, vadId: string, rate: number, signal: AbortSignal): Probe {
  return async (samples, threshold) => {
    // Short silences split spans; the detector's own silence window decides where a turn ends.
    const audio = { samples, sampleRate: rate, channels: 1 };
    const outcome = await runtime.infer(vadId, vadRequest(audio, threshold, 100), { signal });
    const per = outcome.inputSampleRate;
    return (outcome.result.segments ?? []).map((s) => ({
      start: s.start_sample / per,
      end: s.end_sample / per,
    }));
  };
}
