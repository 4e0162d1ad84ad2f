/**
 * The types a model entry is written in and the vocabularies of the config (tasks, modes, backends,
 * isolations). types.ts re-exports them beside ServerConfig; they live apart because the settings
 * table (settings.ts), which ServerConfig is derived from, names some of them, and a types.ts both
 * imported by the table and importing it would be a cycle.
 */

export const TASK_TOKENS = [
  'vad',
  'asr',
  'diar',
  'sep',
  'gen',
  'tts',
  'clon',
  'vc',
  's2s',
  'align',
  'vdes',
  'spk',
  'svc',
  'midi',
] as const;
export type TaskToken = (typeof TASK_TOKENS)[number];

export const MODES = ['offline', 'streaming'] as const;
export type Mode = (typeof MODES)[number];

export const BACKENDS = ['cpu', 'cuda', 'hip', 'vulkan', 'metal'] as const;
export type Backend = (typeof BACKENDS)[number];

/**
 * How a model's slots share an engine: "model", one runner process holding the weights once, its
 * slots' calls running concurrently on one native object; "session", a runner process (and a copy
 * of the weights) per slot, so a crash or a kill costs one slot only.
 */
export const ISOLATIONS = ['model', 'session'] as const;
export type ModelIsolation = (typeof ISOLATIONS)[number];

/** Option maps cross every interface as flat string maps (reference §3.3). */
export type OptionMap = Record<string, string>;

export interface LiveIngestConfig {
  idle_timeout_ms: number;
  total_timeout_ms: number;
  max_body_bytes: number;
  max_chunk_bytes: number;
  send_timeout_ms: number;
}

export interface VoicePreset {
  voice_id?: string;
  /** Absolute path of a reference WAV; it is read and checked at registration. */
  voice_ref?: string;
  reference_text?: string;
}

export interface ModelConfig {
  id: string;
  family: string;
  /** Resolved absolute path (engines such as `fixture` ignore it). */
  path: string;
  task: TaskToken;
  mode: Mode;
  lazy: boolean;
  /** Model ceiling for busy timeouts; undefined means the server default applies. */
  busy_timeout_ms?: number;
  /** This model's wait-queue bound (0 = unbounded); undefined means the server's applies. */
  max_queued_requests?: number;
  /** This model's inference watchdog; undefined means the server's max_inference_ms applies. */
  max_inference_ms?: number;
  /** Longest input audio this model accepts; undefined means the server's max_audio_seconds applies. */
  max_audio_seconds?: number;
  /** Longest speech input text, in characters; undefined means the server's max_input_chars applies. */
  max_input_chars?: number;
  live_ingest?: Partial<LiveIngestConfig>;
  config?: string;
  weight?: string;
  model_spec_override?: string;
  load_options: OptionMap;
  session_options: OptionMap;
  default_request_options: OptionMap;
  voice_presets: Record<string, VoicePreset>;
  /** Voice names (OpenAI's or the operator's) mapped to engine voice ids; over the family's defaults. */
  voice_aliases?: Record<string, string>;
  /** A preset name, already checked to exist, or an inline preset. */
  default_voice_preset?: string | VoicePreset;
  /** Parallel runtime only: the number of independent sessions, 1..16. Undefined means 1. */
  slots?: number;
  /** How the slots share the engine; undefined means the family's default (its first isolation). */
  isolation?: ModelIsolation;
  /**
   * An installed package (its id in the models root) the model is loaded from: its family, task
   * and path fill those the entry leaves out (filled by the runtime at registration).
   */
  package?: string;
}

/** A startup problem that is not fatal but must not be silently ignored. */
export interface ConfigNotice {
  key: string;
  message: string;
}
