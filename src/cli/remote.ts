/**
 * One-shot commands on a running server, through its HTTP API: /v1/audio/speech,
 * /v1/audio/transcriptions and /v1/tasks/run, with `Authorization: Bearer <key>` when a key is
 * given. Without -m the command takes the server's first model of the task (GET /v1/models).
 */
import type { TaskToken } from '../config/types.js';
import {
  type AudioInput,
  type Backend,
  LONG_TEXT_CHARS,
  LONG_UPLOAD_BYTES,
  type ProgressSink,
  type SpanKind,
  type SpeakJob,
  type TimedSpan,
  type TranscribeJob,
  toSpans,
} from './backend.js';

/** The rate voxd's VAD and diarizers count in, for a server that does not say (audio.cpp). */
const FALLBACK_POSITION_RATE = 16000;

/** What went wrong on the server or on the way there; the command exits with 1. */
export class RemoteError extends Error {
  override readonly name = 'RemoteError';
}

async function bytesOf(input: AudioInput): Promise<Buffer> {
  const { source } = input;
  if ('bytes' in source)
    return Buffer.from(source.bytes.buffer, source.bytes.byteOffset, source.bytes.byteLength);
  return source.file.readFile();
}

interface FetchInit {
  method?: string;
  body?: string | FormData;
  /** The body is JSON. */
  json?: boolean;
}

/** What to do about a refused key: the server's message says what was wrong, this says how to fix it. */
export function authHint(status: number): string {
  if (status === 401) return " (pass the server's key with --api-key or $VOXD_API_KEY)";
  if (status === 403) return " (this key's scope does not cover the route; use an admin key)";
  return '';
}

export class RemoteBackend implements Backend {
  readonly #url: string;
  readonly #headers: Record<string, string>;
  readonly #abort = new AbortController();

  constructor(url: string, apiKey: string | undefined) {
    this.#url = url;
    this.#headers = apiKey ? { authorization: `Bearer ${apiKey}` } : {};
  }

  async #fetch(path: string, init: FetchInit = {}): Promise<Response> {
    const headers: Record<string, string> = { ...this.#headers };
    if (init.json) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(`${this.#url}${path}`, {
        method: init.method ?? 'POST',
        body: init.body,
        headers,
        signal: this.#abort.signal,
      });
    } catch (err) {
      const cause = (err as { cause?: { message?: string } }).cause;
      throw new RemoteError(`cannot reach ${this.#url}: ${cause?.message ?? (err as Error).message}`);
    }
    if (res.ok) return res;
    const text = await res.text().catch(() => '');
    let message = text.trim().slice(0, 500) || res.statusText;
    try {
      const json = JSON.parse(text) as { error?: { message?: string } };
      if (typeof json.error?.message === 'string') message = json.error.message;
    } catch {
      // Not JSON (a proxy's page): the text as it came.
    }
    throw new RemoteError(`server answered ${res.status}: ${message}${authHint(res.status)}`);
  }

  async #json(path: string, init: FetchInit = {}): Promise<Record<string, unknown>> {
    const res = await this.#fetch(path, init);
    try {
      return (await res.json()) as Record<string, unknown>;
    } catch {
      throw new RemoteError(`${path}: the server's answer is not JSON`);
    }
  }

  /** `id` as given, or the server's first model serving one of `tasks`. */
  async #model(tasks: readonly TaskToken[], id: string | undefined): Promise<string> {
    if (id !== undefined) return id;
    const list = await this.#json('/v1/models', { method: 'GET' });
    const data = Array.isArray(list['data']) ? (list['data'] as { id?: unknown; task?: unknown }[]) : [];
    const first = data.find((m) => typeof m.id === 'string' && tasks.includes(m.task as TaskToken));
    if (!first) throw new RemoteError(`the server at ${this.#url} has no ${tasks.join(' or ')} model`);
    return first.id as string;
  }

  async speak(job: SpeakJob, progress: ProgressSink): Promise<Buffer> {
    const model = await this.#model(['tts', 'clon', 'vdes'], job.model);
    const body: Record<string, unknown> = { model, input: job.text, response_format: job.format };
    if (job.voice !== undefined) body['voice'] = job.voice;
    if (job.speed !== undefined) body['speed'] = job.speed;
    if (job.text.length >= LONG_TEXT_CHARS)
      progress.start(`speaking ${job.text.length} characters on ${model}`);
    const res = await this.#fetch('/v1/audio/speech', { body: JSON.stringify(body), json: true });
    return Buffer.from(await res.arrayBuffer());
  }

  async transcribe(input: AudioInput, job: TranscribeJob, progress: ProgressSink): Promise<string> {
    const model = await this.#model(['asr'], job.model);
    const bytes = await bytesOf(input);
    const form = new FormData();
    form.set('model', model);
    form.set('file', new Blob([bytes]), input.name === '-' ? 'stdin' : input.name.replace(/^.*\//, ''));
    form.set('response_format', job.format);
    if (job.language) form.set('language', job.language);
    if (bytes.length >= LONG_UPLOAD_BYTES) progress.start(`transcribing ${input.name} on ${model}`);
    const res = await this.#fetch('/v1/audio/transcriptions', { body: form });
    return res.text();
  }

  async spans(
    kind: SpanKind,
    input: AudioInput,
    id: string | undefined,
    progress: ProgressSink,
  ): Promise<TimedSpan[]> {
    const model = await this.#model([kind], id);
    const bytes = await bytesOf(input);
    if (bytes.length >= LONG_UPLOAD_BYTES)
      progress.start(`${kind === 'diar' ? 'diarizing' : 'finding speech in'} ${input.name} on ${model}`);
    const body = { model, request: { audio_base64: bytes.toString('base64') } };
    const json = await this.#json('/v1/tasks/run', { body: JSON.stringify(body), json: true });
    const key = kind === 'diar' ? 'speaker_turns' : 'segments';
    const positions = json[key];
    if (!Array.isArray(positions))
      throw new RemoteError(`model '${model}' answered no ${key} (is it a ${kind} model?)`);
    const rate = typeof json['sample_rate'] === 'number' ? json['sample_rate'] : FALLBACK_POSITION_RATE;
    return toSpans(positions, rate);
  }

  async close(): Promise<void> {}

  kill(): void {
    this.#abort.abort();
  }
}
