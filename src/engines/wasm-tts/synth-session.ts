/**
 * A TTS session whose synthesis runs in its own worker thread: the event loop never waits on it,
 * a cancelled request really stops (the thread is terminated and a fresh one starts next time),
 * and nothing but plain data crosses the boundary.
 */
import { Worker } from 'node:worker_threads';
import { decodeWav } from '../../audio/wav-decode.js';
import { invalidRequest } from '../../errors.js';
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
const SPEAKABLE = /[\p{L}\p{N}]/u;

function speedOf(options: Record<string, string>): number {
  const raw = options['speed'] ?? options['speaking_rate'];
  if (raw === undefined) return 1;
  const speed = Number(raw);
  if (!Number.isFinite(speed) || speed < 0.25 || speed > 4) {
    throw invalidRequest(`speed: "${raw}" is invalid; expected a number between 0.25 and 4`);
  }
  return speed;
}

export class SynthSession implements EngineSession {
  #worker: Worker | undefined;
  #nextJob = 1;

  constructor(
    readonly id: string,
    private readonly workerData: SynthWorkerData,
    private readonly voices: VoicePolicy,
  ) {}

  async run(request: EngineRequest, { signal }: RunContext): Promise<EngineResult> {
    const text = request.text ?? '';
    if (!SPEAKABLE.test(text)) throw invalidRequest('input: the text has no letters or digits to speak');
    const voice = request.voiceId ?? this.voices.defaultVoice;
    this.voices.check(voice);
    const job: SynthJob = { id: this.#nextJob++, text, voice, speed: speedOf(request.options) };
    const reply = await this.#post(job, signal);
    if (!reply.ok) {
      if (this.voices.isVoiceError(reply.message))
        throw invalidRequest(`voice: "${voice}" is not available in this engine`);
      throw new Error(reply.message);
    }
    return { audio: decodeWav(reply.wav) };
  }

  async dispose(): Promise<void> {
    const worker = this.#worker;
    this.#worker = undefined;
    await worker?.terminate();
  }

  #post(job: SynthJob, signal: AbortSignal): Promise<SynthReply> {
    signal.throwIfAborted();
    this.#worker ??= new Worker(WORKER_URL, { workerData: this.workerData, execArgv: ['--no-warnings'] });
    const worker = this.#worker;
    return new Promise<SynthReply>((resolve, reject) => {
      const cleanup = () => {
        worker.off('message', onMessage);
        worker.off('error', onFailure);
        worker.off('exit', onExit);
        signal.removeEventListener('abort', onAbort);
      };
      const discard = () => {
        if (this.#worker === worker) this.#worker = undefined;
        void worker.terminate();
      };
      const onMessage = (reply: SynthReply) => {
        if (reply.id !== job.id) return;
        cleanup();
        resolve(reply);
      };
      const onFailure = (err: Error) => {
        cleanup();
        discard();
        reject(err);
      };
      const onExit = (code: number) => onFailure(new Error(`synthesis thread exited with code ${code}`));
      const onAbort = () => {
        cleanup();
        discard();
        reject(signal.reason);
      };
      worker.on('message', onMessage);
      worker.on('error', onFailure);
      worker.on('exit', onExit);
      signal.addEventListener('abort', onAbort, { once: true });
      worker.postMessage(job);
    });
  }
}
