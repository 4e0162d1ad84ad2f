/**
 * Speech detection with silero VAD through sherpa-onnx's `Vad`, shared by every worker that needs
 * speech segments (silero_vad, classic_diar). Its calls are synchronous, so it is only ever
 * created inside a session's runner process, never on the server's event loop.
 */
import { createRequire } from 'node:module';
import { refineSegment } from './refine-segments.js';

export interface VadSettings {
  model: string;
  threshold: number;
  minSilenceDuration: number;
  minSpeechDuration: number;
  maxSpeechDuration: number;
}

/** A speech span in samples of the 16 kHz input: [start, end). */
export interface SpeechSpan {
  start: number;
  end: number;
}

interface SherpaVad {
  acceptWaveform(samples: Float32Array): void;
  isEmpty(): boolean;
  front(external: boolean): { start: number; samples: Float32Array };
  pop(): void;
  flush(): void;
  reset(): void;
}

const WINDOW = 512;

/** Creates one sherpa Vad and returns the function that runs it over a whole 16 kHz mono signal. */
export function createDetector(settings: VadSettings): (samples: Float32Array) => SpeechSpan[] {
  const sherpa = createRequire(import.meta.url)('sherpa-onnx-node') as {
    Vad: new (config: unknown, seconds: number) => SherpaVad;
  };
  const vad = new sherpa.Vad(
    {
      sileroVad: {
        model: settings.model,
        threshold: settings.threshold,
        minSilenceDuration: settings.minSilenceDuration,
        minSpeechDuration: settings.minSpeechDuration,
        maxSpeechDuration: settings.maxSpeechDuration,
        windowSize: WINDOW,
      },
      sampleRate: 16000,
      numThreads: 1,
      debug: false,
    },
    60,
  );
  return (samples) => {
    vad.reset();
    const segments: SpeechSpan[] = [];
    const drain = () => {
      while (!vad.isEmpty()) {
        const front = vad.front(false);
        segments.push(refineSegment(samples, front.start, front.start + front.samples.length));
        vad.pop();
      }
    };
    for (let i = 0; i < samples.length; i += WINDOW) {
      vad.acceptWaveform(samples.subarray(i, i + WINDOW));
      drain();
    }
    vad.flush();
    drain();
    return segments;
  };
}
