/**
 * One-shot commands in this process: the runtime and engines built as `startVoxd` builds them,
 * from the embedded models or a server config, but with no HTTP server. The requests are built by
 * the routes' own builders (src/api: voice resolution, speed, options, input limits) and answered
 * in their formats, so a command answers what the same request to `voxd serve` would.
 */

import { type AudioCaller, audioLimits } from '../api/audio-limits.js';
import type { Fields } from '../api/fields.js';
import { modelEntry } from '../api/model-lookup.js';
import { SPEECH_TASKS } from '../api/speech/input-text.js';
import { encodeSpeech } from '../api/speech/output.js';
import { speechRequest } from '../api/speech/request.js';
import { timing } from '../api/timing.js';
import { transcriptionRequest } from '../api/transcription/engine-request.js';
import { audioSeconds, timedReply, transcriptJson, verboseJson } from '../api/transcription/formats.js';
import { openModelsRoot } from '../app.js';
import { Codec, probeFfmpeg } from '../audio/ffmpeg.js';
import { decodeAudio } from '../audio/input.js';
import type { Audio } from '../audio/types.js';
import { type CliOverrides, loadServerConfig } from '../config/server-config.js';
import type { ServerConfig, TaskToken } from '../config/types.js';
import { createEngineCatalog } from '../engines/catalog.js';
import { killRunnerProcesses } from '../engines/engine-worker.js';
import { VoxdError } from '../errors.js';
import type { ModelEntry } from '../runtime/model-entry.js';
import { Runtime } from '../runtime/runtime.js';
import {
  type AudioInput,
  type Backend,
  LONG_AUDIO_SECONDS,
  LONG_TEXT_CHARS,
  type ProgressSink,
  type SpanKind,
  type SpeakJob,
  type TimedSpan,
  type TranscribeJob,
  toSpans,
} from './backend.js';

/** How long the closing runtime lets a run finish before it is cancelled (none runs by then). */
const CLOSE_DEADLINE_MS = 5000;

export interface InProcessOptions {
  configPath?: string;
  modelsRoot?: string;
  log?: (message: string) => void;
}

export class InProcessBackend implements Backend {
  readonly #runtime: Runtime;
  readonly #codec: Codec;
  readonly #config: ServerConfig;
  readonly #abort = new AbortController();
  /** Where the models come from, for messages. */
  readonly #source: string;
  #closing: Promise<void> | undefined;

  private constructor(runtime: Runtime, codec: Codec, source: string) {
    this.#source = source;
    this.#runtime = runtime;
    this.#codec = codec;
    this.#config = runtime.config;
  }

  static async open(options: InProcessOptions): Promise<InProcessBackend> {
    const catalog = createEngineCatalog();
    const log = options.log ?? (() => {});
    const overrides: CliOverrides = {};
    if (options.modelsRoot !== undefined) overrides.models_root = options.modelsRoot;
    const { config, notices } = loadServerConfig({
      configPath: options.configPath,
      overrides,
      knownFamilies: [...catalog.keys()],
    });
    for (const notice of notices) log(`notice: ${notice.message}`);
    // One command uses one model: the others stay unloaded however the config marks them.
    config.models = config.models.map((model) => ({ ...model, lazy: true }));
    const modelsRoot = await openModelsRoot(config, catalog);
    const runtime = new Runtime(config, { catalog, modelsRoot, log });
    await runtime.start();
    const codec = new Codec(await probeFfmpeg(config.ffmpeg_path), {
      timeoutMs: config.ffmpeg_timeout_ms,
      stallMs: config.ffmpeg_decode_stall_ms,
    });
    const source = options.configPath === undefined ? 'the embedded models' : options.configPath;
    return new InProcessBackend(runtime, codec, source);
  }

  /**
   * The model `id` (which must serve one of `tasks`), or the config's first model that does. An id
   * the config does not name may be a package installed in the models root or a model alias,
   * resolved as a request to `voxd serve` resolves it.
   */
  async #model(tasks: readonly TaskToken[], id: string | undefined): Promise<ModelEntry> {
    if (id === undefined) {
      const first = this.#config.models.find((m) => tasks.includes(m.task));
      if (!first)
        throw new VoxdError(
          'E_MODEL_NOT_FOUND',
          `no ${tasks.join(' or ')} model in ${this.#source}; name one with -m`,
        );
      return this.#runtime.get(first.id);
    }
    const entry = await modelEntry(this.#runtime, id);
    if (!tasks.includes(entry.config.task))
      throw new VoxdError(
        'E_INVALID_REQUEST',
        `model '${id}' has task '${entry.config.task}'; this command needs a ${tasks.join(' or ')} model`,
      );
    return entry;
  }

  /** Every command's audio is read under the server's limits, with its ffmpeg, until it is killed. */
  get #caller(): AudioCaller {
    return { config: this.#config, codec: this.#codec, signal: this.#abort.signal };
  }

  async #decode(input: AudioInput, entry: ModelEntry, verb: string, progress: ProgressSink): Promise<Audio> {
    const audio = await decodeAudio(input.source, input.name, audioLimits(this.#caller, entry.config));
    const seconds = audioSeconds(audio);
    if (seconds >= LONG_AUDIO_SECONDS)
      progress.start(`${verb} ${Math.round(seconds)} s of audio with ${entry.id}`);
    return audio;
  }

  async speak(job: SpeakJob, progress: ProgressSink): Promise<Buffer> {
    const entry = await this.#model(SPEECH_TASKS, job.model);
    const fields: Fields = {};
    if (job.voice !== undefined) fields['voice'] = job.voice;
    if (job.speed !== undefined) fields['speed'] = job.speed;
    const request = await speechRequest(entry, { text: job.text, textField: 'text', fields }, this.#caller);
    if (job.text.length >= LONG_TEXT_CHARS)
      progress.start(`speaking ${job.text.length} characters with ${entry.id}`);
    const outcome = await this.#runtime.infer(entry.id, request, { signal: this.#abort.signal });
    const audio = outcome.result.audio;
    if (!audio) throw new VoxdError('E_ENGINE', `model '${entry.id}' produced no audio output`);
    const encoded = await encodeSpeech(audio, { format: job.format }, this.#codec, this.#abort.signal);
    return encoded.body;
  }

  async transcribe(input: AudioInput, job: TranscribeJob, progress: ProgressSink): Promise<string> {
    const entry = await this.#model(['asr'], job.model);
    const audio = await this.#decode(input, entry, 'transcribing', progress);
    const request = transcriptionRequest(entry, { language: job.language }, { audio });
    const outcome = await this.#runtime.infer(entry.id, request, { signal: this.#abort.signal });
    const text = outcome.result.text;
    if (text === undefined) throw new VoxdError('E_ENGINE', `model '${entry.id}' produced no text`);
    if (job.format === 'text') return text;
    if (job.format === 'json')
      return JSON.stringify({
        ...transcriptJson({ outcome, audio, language: job.language }),
        timing: timing(outcome.wallMs, audio),
      });
    const answer = {
      outcome,
      audio,
      // The HTTP defaults: segments in verbose_json, words only when asked for (the CLI does not ask).
      request: {
        format: job.format,
        words: false,
        segments: true,
        temperature: undefined,
        chunking: undefined,
      },
      task: 'transcribe' as const,
      language: job.language,
    };
    if (job.format === 'verbose_json') return JSON.stringify(verboseJson(answer));
    const reply = timedReply(answer);
    return 'body' in reply ? reply.body.toString('utf8') : JSON.stringify(reply.json);
  }

  async spans(
    kind: SpanKind,
    input: AudioInput,
    model: string | undefined,
    progress: ProgressSink,
  ): Promise<TimedSpan[]> {
    const entry = await this.#model([kind], model);
    const verb = kind === 'diar' ? 'diarizing' : 'finding speech in';
    const audio = await this.#decode(input, entry, verb, progress);
    const request = transcriptionRequest(entry, {}, { audio });
    const outcome = await this.#runtime.infer(entry.id, request, { signal: this.#abort.signal });
    const { result } = outcome;
    const positions = kind === 'diar' ? result.speakerTurns : result.segments;
    if (!positions)
      throw new VoxdError(
        'E_ENGINE',
        `model '${entry.id}' produced no ${kind === 'diar' ? 'speaker turns' : 'speech segments'}`,
      );
    return toSpans(positions, outcome.inputSampleRate);
  }

  close(): Promise<void> {
    this.#closing ??= this.#runtime.close(CLOSE_DEADLINE_MS);
    return this.#closing;
  }

  kill(): void {
    this.#abort.abort(new VoxdError('E_SHUTTING_DOWN', 'interrupted'));
    for (const child of this.#codec.children) child.kill('SIGKILL');
    killRunnerProcesses();
  }
}
