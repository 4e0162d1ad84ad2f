/** Worker thread of one sherpa-onnx offline recognizer session (its decode calls are synchronous here). */
import { createRequire } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';

export interface RecognizerJob {
  id: number;
  /** 16 kHz mono. */
  samples: Float32Array;
  /** Per-request settings sherpa reads from the stream (OfflineStream.setOption), e.g. SenseVoice's use_itn. */
  streamOptions?: Record<string, string>;
  /** The recognizer config for this job when a request changed it (absent: the loaded one). */
  config?: unknown;
}

export type RecognizerReply =
  | { id: number; ok: true; text: string; lang: string }
  | { id: number; ok: false; message: string };

interface Stream {
  acceptWaveform(wave: { samples: Float32Array; sampleRate: number }): void;
  setOption(key: string, value: string): void;
}
interface Recognizer {
  createStream(): Stream;
  decode(stream: Stream): void;
  getResult(stream: Stream): { text: string; lang?: string };
  setConfig(config: unknown): void;
}

const sherpa = createRequire(import.meta.url)('sherpa-onnx-node') as {
  OfflineRecognizer: new (config: unknown) => Recognizer;
};
// workerData is the recognizer config the family built (model files and options).
const recognizer = new sherpa.OfflineRecognizer(workerData);
const loaded = JSON.stringify(workerData);
let applied = loaded;

parentPort!.on('message', (job: RecognizerJob) => {
  try {
    // setConfig only when the settings differ, and back to the loaded ones after a patched request.
    const wanted = job.config === undefined ? loaded : JSON.stringify(job.config);
    if (wanted !== applied) {
      recognizer.setConfig(job.config ?? workerData);
      applied = wanted;
    }
    const stream = recognizer.createStream();
    for (const [key, value] of Object.entries(job.streamOptions ?? {})) stream.setOption(key, value);
    stream.acceptWaveform({ samples: job.samples, sampleRate: 16000 });
    recognizer.decode(stream);
    const result = recognizer.getResult(stream);
    parentPort!.postMessage({
      id: job.id,
      ok: true,
      text: result.text.trim(),
      lang: result.lang ?? '',
    } satisfies RecognizerReply);
  } catch (err) {
    parentPort!.postMessage({
      id: job.id,
      ok: false,
      message: err instanceof Error ? err.message : String(err),
    } satisfies RecognizerReply);
  }
});
