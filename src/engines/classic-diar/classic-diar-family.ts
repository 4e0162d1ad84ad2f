import { CpuFamily, INPUT_RATE } from '../cpu-family.js';
import { numberOption } from '../engine-options.js';
import { inputSamples, WorkerEngineSession } from '../engine-worker.js';
import { sileroModel } from '../silero-vad/silero-vad-family.js';
import type { EngineRequest, EngineResult, LoadSpec, ParamRow, RunContext, SpeakerTurn } from '../types.js';
import type { DiarJob, DiarReply, DiarWorkerData } from './diar-worker.js';
import type { Turn } from './diarize.js';

const WORKER_URL = new URL('./diar-worker.js', import.meta.url);
const MAX_SPEAKERS = 64;
/** Measured: within-speaker similarity 0.90-0.94, between distinct voices at most 0.72 (engines.md §4). */
export const DEFAULT_THRESHOLD = 0.72;
export const DEFAULT_WINDOW_MS = 3000;

interface SessionSettings {
  worker: DiarWorkerData;
  threshold: number;
  numSpeakers?: number;
}

const speakerTurn = ({ start, end, speaker, confidence }: Turn): SpeakerTurn => ({
  start_sample: start,
  end_sample: end,
  speaker_id: speaker,
  confidence,
});

class ClassicDiarSession extends WorkerEngineSession<Omit<DiarJob, 'id'>, DiarReply, SessionSettings> {
  /**
   * With a listener (a streamed response), the streaming variant: each speech segment's turns are
   * sent as soon as it is decided (see diarizeOnline), and the result is those turns.
   */
  async run(request: EngineRequest, { signal, onEvent }: RunContext): Promise<EngineResult> {
    const numSpeakers =
      numberOption(request.options, 'num_speakers', {
        where: 'options.',
        min: 1,
        max: MAX_SPEAKERS,
        integer: true,
      }) ?? this.settings.numSpeakers;
    const samples = inputSamples(request, 'diarization');
    const onTurns = (event: unknown) =>
      onEvent?.({
        type: 'turns',
        turns: (event as { turns: Turn[] }).turns.map(speakerTurn),
        sampleRate: INPUT_RATE,
      });
    const reply = await this.job(
      { samples, numSpeakers, threshold: this.settings.threshold, online: onEvent !== undefined },
      signal,
      [],
      onEvent ? onTurns : undefined,
    );
    return { text: '', speakerTurns: reply.turns.map(speakerTurn) };
  }
}

export class ClassicDiarFamily extends CpuFamily {
  readonly name = 'classic_diar';
  readonly tasks = ['diar'] as const;
  readonly params: readonly ParamRow[] = [
    {
      name: 'num_speakers',
      type: 'int',
      description: `number of speakers when known (1..${MAX_SPEAKERS}); otherwise clustering stops at the similarity threshold`,
    },
  ];

  async estimateFootprint(): Promise<number> {
    return 30 * 1024 * 1024;
  }

  async load(spec: LoadSpec) {
    const model = await sileroModel(spec);
    const o = spec.loadOptions;
    const load = (key: string, min: number, max: number, integer = false) =>
      numberOption(o, key, { where: 'load_options.', min, max, integer });
    const settings: SessionSettings = {
      worker: {
        vad: {
          model,
          threshold: load('vad_threshold', 0.01, 0.99) ?? 0.5,
          minSilenceDuration: (load('min_silence_ms', 0, 60_000) ?? 200) / 1000,
          minSpeechDuration: (load('min_speech_ms', 0, 60_000) ?? 250) / 1000,
          maxSpeechDuration: (load('max_speech_ms', 1000, 600_000) ?? 20_000) / 1000,
        },
        maxWindow: Math.round(((load('window_ms', 500, 600_000) ?? DEFAULT_WINDOW_MS) * INPUT_RATE) / 1000),
      },
      threshold: load('threshold', -1, 1) ?? DEFAULT_THRESHOLD,
      numSpeakers: load('num_speakers', 1, MAX_SPEAKERS, true),
    };
    return this.loadedOnRunners(spec, WORKER_URL, settings.worker, ClassicDiarSession, settings);
  }
}
