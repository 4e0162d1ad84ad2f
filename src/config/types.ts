/**
 * The validated server configuration: the audio.cpp `server.json` format plus CLI overrides,
 * with every default applied and every relative path resolved against the config file's folder.
 */
import type { ApiKey } from './api-keys.js';

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

export interface ServerConfig {
  host: string;
  port: number;
  cors_origins: '' | '*';
  ui: boolean;
  ui_management: boolean;
  backend: Backend;
  device: number;
  threads: number;
  lazy_load: boolean;
  log: boolean;
  log_file?: string;
  log_request_body: boolean;
  /** The least severe log level written (`--log-level`); request lines are info with --log, else debug. */
  log_level: import('../observability/log-levels.js').LogLevel;
  max_request_body_bytes: number;
  /** A request body (JSON or multipart) that sends nothing for this long is answered 408; 0 = no limit. */
  body_timeout_ms: number;
  /** Largest JSON request body (max_request_body_bytes still applies when lower). */
  max_json_body_bytes: number;
  /** Request body bytes held in memory at once over all requests; past it 503. 0 = no limit. */
  max_inflight_body_bytes: number;
  /** A whole JSON or multipart body must arrive within this long of its headers; 0 = no limit. */
  body_deadline_ms: number;
  /** Client connections kept open at once; past it 503 and close. 0 = no limit. */
  max_connections: number;
  /** The VAD model (family silero_vad) that cuts long audio for a transcription's chunking_strategy. */
  chunking_vad_model: string;
  /** Longest input audio a request may carry, checked from the header before decoding; 0 = no limit. */
  max_audio_seconds: number;
  /** The ffmpeg binary (a path, or a name looked up on PATH) for formats other than WAV and PCM. */
  ffmpeg_path: string;
  /** An ffmpeg decode or encode running longer is stopped (503); 0 = no limit. */
  ffmpeg_timeout_ms: number;
  /** An ffmpeg decode that makes no audio for this long is stopped (400); 0 = no limit. */
  ffmpeg_decode_stall_ms: number;
  /** Speech's response_format when a request names none. */
  default_speech_format: 'wav' | 'pcm' | 'mp3' | 'opus' | 'aac' | 'flac';
  /** Longest text a speech request may carry, in characters; 0 = no limit. */
  max_input_chars: number;
  /**
   * Folders (absolute, symlinks resolved) under which requests may name server-local files:
   * `audio`, `voice_ref`, batch items, path options. Empty: no server-local file can be named.
   */
  file_roots: string[];
  busy_timeout_ms: number;
  /** Requests that may wait for a model's slots; one more is refused (503 queue_full). 0 = unbounded. */
  max_queued_requests: number;
  /** /ready answers 503 while every loaded model's queue is saturated (see QueueBound). */
  ready_when_saturated: boolean;
  max_loaded_models: number;
  idle_unload_ms: number;
  /** How long a shutdown lets running requests finish before it cancels them; 0 waits without limit. */
  shutdown_timeout_ms: number;
  /** A request running longer is cancelled (504); 0 = no limit. A model's own value wins. */
  max_inference_ms: number;
  min_free_memory_mb: number;
  live_ingest: LiveIngestConfig;
  model_spec_override?: string;
  voice_dir?: string;
  /** The largest file one install download may bring; 0 = no limit. */
  max_download_bytes: number;
  /** Most bytes a package archive may expand to (checked from its listing); 0 = no limit. */
  max_package_bytes: number;
  /** Install downloads may target loopback, link-local and private addresses. */
  installer_allow_private_hosts: boolean;
  /** Where installed model packages live (absolute); created at startup. */
  models_root: string;
  /** The models root when none is configured: `models` in voxd's data folder (src/config/data-dir.ts). */
  default_models_root: string;
  /** HTTPS instead of HTTP: the certificate chain and private key, read at startup. */
  tls?: { cert: { path: string; pem: string }; key: { path: string; pem: string } };
  frontend_listener: string;
  frontend_options: OptionMap;
  /** Selects the parallel runtime once at startup (`--parallel-jobs`). */
  parallel_jobs: boolean;
  models: ModelConfig[];
  /**
   * Other names a request may give for a model (alias -> model id), the defaults included; read
   * through aliasTarget (src/config/model-aliases.ts), which takes own keys only.
   */
  model_aliases: Readonly<Record<string, string>>;
  /** Keys from every source, merged; empty means no key is asked for (see docs/configuration.md). */
  api_keys: ApiKey[];
  /** Paths among /health, /ready, /metrics that answer without a key. */
  open_endpoints: string[];
  /** Serve without keys on a non-loopback host (`--insecure`). */
  insecure: boolean;
  /** The `fixture` test engine may be served (`--enable-fixture`, VOXD_ENABLE_FIXTURE=1). */
  enable_fixture: boolean;
  /** Folder that relative paths resolved against (the config file's folder, or the cwd). */
  base_dir: string;
}

/** A startup problem that is not fatal but must not be silently ignored. */
export interface ConfigNotice {
  key: string;
  message: string;
}
