/**
 * The one interface every engine family implements. Everything that crosses it is plain data and
 * audio buffers (no sockets, no runtime objects), so a session's engine can live in a runner
 * child process (src/engines/engine-worker.ts) without changing its callers.
 */
import type { Audio } from '../audio/types.js';
import type { Mode, ModelIsolation, OptionMap, TaskToken } from '../config/types.js';
import type { VoiceAliasMap } from './voice-aliases.js';

/** What a family needs to load weights once. */
export interface LoadSpec {
  modelId: string;
  path: string;
  task: TaskToken;
  mode: Mode;
  config?: string;
  weight?: string;
  loadOptions: OptionMap;
  backend: string;
  device: number;
  threads: number;
  /** How the sessions share the engine (one of the family's `isolations`). */
  isolation: ModelIsolation;
}

/** What a family needs to create one independent session on loaded weights. */
export interface SessionSpec {
  /** 0 is the primary session; 1.. are clones. */
  index: number;
  sessionOptions: OptionMap;
}

export interface Segment {
  start_sample: number;
  end_sample: number;
  confidence: number;
  text?: string;
}

export interface SpeakerTurn extends Segment {
  speaker_id: number;
}

export interface Word {
  word: string;
  start_sample: number;
  end_sample: number;
  confidence: number;
}

export interface EngineRequest {
  task: TaskToken;
  text?: string;
  language?: string;
  /** Input audio, already converted to the model's `audioInput` format. */
  audio?: Audio;
  /**
   * Input audio still arriving (a live route), each piece already in the model's `audioInput`
   * format; it ends when the client's body ends and throws if the body fails. The runtime gives it
   * only to sessions with `runLive`; for the others it collects the pieces into `audio`.
   */
  liveAudio?: AsyncIterable<Audio>;
  voiceId?: string;
  voiceRef?: Audio;
  referenceText?: string;
  /** Request options (model defaults merged under request values), flattened to strings. */
  options: OptionMap;
}

export interface EngineResult {
  text?: string;
  language?: string;
  audio?: Audio;
  segments?: Segment[];
  speakerTurns?: SpeakerTurn[];
  words?: Word[];
}

/** Incremental output, for streaming responses. */
export type EngineEvent =
  | { type: 'audio'; audio: Audio }
  | { type: 'text'; delta: string }
  /** Speaker turns that have closed since the last such event (diarization), in samples at `sampleRate`. */
  | { type: 'turns'; turns: SpeakerTurn[]; sampleRate: number };

export interface RunContext {
  /** Aborted when the caller no longer wants the result (client gone, shutdown deadline). */
  signal: AbortSignal;
  /**
   * Receives incremental output. Its promise resolves once the caller took the event (a stream
   * wrote it to a client that keeps up); an engine awaits it before making more, which is how a
   * slow client slows the engine down (backpressure) rather than filling the server's memory.
   */
  onEvent?: (event: EngineEvent) => void | Promise<void>;
  /**
   * The caller takes the output from the events alone: the result need not repeat the audio they
   * carried (a speech engine then keeps no copy of a long answer).
   */
  eventsOnly?: boolean;
}

export interface EngineSession {
  /** Unique across the process, so a test can prove which session served a request. */
  readonly id: string;
  run(request: EngineRequest, context: RunContext): Promise<EngineResult>;
  /** Runs on `request.liveAudio` as it arrives (partial results while the client still sends). */
  runLive?(request: EngineRequest, context: RunContext): Promise<EngineResult>;
  /**
   * The runner process this session's calls go to now (shared with the model's other sessions
   * under isolation "model"); undefined while none runs. Read for the resident-memory metric.
   */
  processId?(): number | undefined;
  dispose(): Promise<void>;
}

export interface AudioFormat {
  sampleRate: number;
  channels: number;
}

/** Weights loaded once; sessions are created on them. */
export interface LoadedModel {
  /** The most independent sessions these weights support. */
  readonly capacity: number;
  /** The format input audio is converted to before `run`. */
  readonly audioInput: AudioFormat;
  /** Returns null when the engine could not create the session ("null primary"). */
  createSession(spec: SessionSpec): Promise<EngineSession | null>;
  /** Releases the weights; called only after every session is disposed. */
  dispose(): Promise<void>;
}

/** One row of `GET /v1/models?include_params=true`. */
export interface ParamRow {
  name: string;
  type: 'int' | 'float' | 'bool' | 'string' | 'enum';
  description: string;
  default?: string;
  values?: string[];
}

export interface EngineFamily {
  readonly name: string;
  readonly tasks: readonly TaskToken[];
  /** Compute backends this family can run on; voxd's engines run on the CPU. */
  readonly backends: readonly string[];
  /** The most sessions any model of this family can advertise; 1 means no parallel slots. */
  readonly maxCapacity: number;
  /**
   * How this family's sessions can share an engine, the default first (see ModelIsolation).
   * Absent: "session" only, for engines whose native object cannot serve two calls at once.
   */
  readonly isolations?: readonly ModelIsolation[];
  /** Request options the family understands (reported by include_params). */
  readonly params: readonly ParamRow[];
  /**
   * TTS only: OpenAI voice names (and any others) mapped to this family's own voice ids, applied
   * before the request reaches a session (src/engines/voice-aliases.ts). Without it, an OpenAI
   * name speaks in the model's default voice.
   */
  readonly voiceAliases?: VoiceAliasMap;
  /**
   * Whether its sessions take input audio as it arrives (`runLive`): a realtime turn under server
   * VAD then starts at the start of speech, and partial transcripts flow while the user speaks.
   */
  readonly liveInput?: boolean;
  load(spec: LoadSpec, signal: AbortSignal): Promise<LoadedModel>;
  /**
   * Whether `dir` is a model folder of this family, checked as `load` checks it (file names, ONNX
   * metadata, small side files) but without loading weights or starting a runner. Resolves with the
   * `path` a load of it takes (the folder, or the one model file for single-file families); throws
   * a VoxdError naming what is missing otherwise. The installer validates and detects packages with it.
   */
  recognise?(dir: string): Promise<string>;
  /**
   * Bytes of memory a load of `slots` sessions will take, for min_free_memory_mb and status;
   * undefined when unknown. Without it, the model's files count once per copy of the weights
   * (src/runtime/memory.ts).
   */
  estimateFootprint?(spec: LoadSpec, slots: number): Promise<number | undefined>;
}
