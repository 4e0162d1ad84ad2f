/**
 * Compressed audio in and out through Debian's ffmpeg, run as a child process fed and read through
 * pipes. WAV and PCM never come here. Every child is counted against a cap (callers queue beyond
 * it), killed when its caller's signal aborts, bounded in time, and its output bounded in size, so
 * no upload can hold a process, a pipe or memory for long.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { VoxdError } from '../errors.js';
import type { Audio } from './types.js';

export const SPEECH_ENCODINGS = ['mp3', 'opus', 'aac', 'flac'] as const;
export type SpeechEncoding = (typeof SPEECH_ENCODINGS)[number];

/** ffmpeg's encoder, muxer and the answer's Content-Type of each compressed speech format. */
const ENCODINGS: Record<
  SpeechEncoding,
  { encoder: string; muxer: string; args: string[]; contentType: string }
> = {
  mp3: { encoder: 'libmp3lame', muxer: 'mp3', args: ['-b:a', '128k'], contentType: 'audio/mpeg' },
  opus: { encoder: 'libopus', muxer: 'ogg', args: ['-b:a', '64k'], contentType: 'audio/ogg' },
  aac: { encoder: 'aac', muxer: 'adts', args: ['-b:a', '128k'], contentType: 'audio/aac' },
  flac: { encoder: 'flac', muxer: 'flac', args: [], contentType: 'audio/flac' },
};

export function contentTypeOf(format: SpeechEncoding): string {
  return ENCODINGS[format].contentType;
}

/** What the configured binary can do, found once at startup. */
export interface CodecInfo {
  /** The binary as configured; undefined when it could not be run. */
  path: string | undefined;
  encodings: SpeechEncoding[];
}

const probes = new Map<string, Promise<CodecInfo>>();

/**
 * Runs `ffmpeg -encoders` (bounded) and reads which of the speech encoders it has; once per binary
 * per process (tests start many servers).
 */
export function probeFfmpeg(path: string): Promise<CodecInfo> {
  let probe = probes.get(path);
  if (!probe) {
    probe = runProbe(path);
    probes.set(path, probe);
  }
  return probe;
}

async function runProbe(path: string): Promise<CodecInfo> {
  const output = await new Promise<string | undefined>((resolve) => {
    let text = '';
    let child: ChildProcess;
    try {
      child = spawn(path, ['-hide_banner', '-encoders'], { stdio: ['ignore', 'pipe', 'ignore'] });
    } catch {
      return resolve(undefined);
    }
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      text += d;
    });
    child.on('error', () => resolve(undefined));
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve(code === 0 ? text : undefined);
    });
  });
  if (output === undefined) return { path: undefined, encodings: [] };
  const has = (encoder: string) => new RegExp(`^\\s*A\\S*\\s+${encoder}\\s`, 'm').test(output);
  return { path, encodings: SPEECH_ENCODINGS.filter((f) => has(ENCODINGS[f].encoder)) };
}

/** A counting semaphore: at most `size` children at once, the others wait in arrival order. */
class Slots {
  #free: number;
  readonly #waiting: (() => void)[] = [];
  constructor(size: number) {
    this.#free = size;
  }
  async take(signal: AbortSignal): Promise<() => void> {
    signal.throwIfAborted();
    if (this.#free > 0) this.#free--;
    else {
      await new Promise<void>((resolve, reject) => {
        const wake = () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        };
        const onAbort = () => {
          const i = this.#waiting.indexOf(wake);
          if (i >= 0) this.#waiting.splice(i, 1);
          reject(signal.reason);
        };
        this.#waiting.push(wake);
        signal.addEventListener('abort', onAbort, { once: true });
      });
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiting.shift();
      if (next) next();
      else this.#free++;
    };
  }
}

export interface DecodeLimits {
  /** Longest audio in seconds (0 = none): decoding stops once the output holds more. */
  maxSeconds: number;
}

/**
 * The most output bytes that hold `maxSeconds` of the WAV ffmpeg writes (float samples), read from
 * its fmt chunk, which ffmpeg puts first; Infinity until the header is in, or without a limit.
 */
function outputCap(head: Buffer, maxSeconds: number): number {
  if (maxSeconds <= 0 || head.length < 28) return Number.POSITIVE_INFINITY;
  const channels = head.readUInt16LE(22);
  const rate = head.readUInt32LE(24);
  return 4096 + maxSeconds * rate * channels * 4;
}

/** A timer for ffmpeg_timeout_ms, where 0 means no limit (clearTimeout takes undefined). */
function afterMs(ms: number, fire: () => void): NodeJS.Timeout | undefined {
  return ms > 0 ? setTimeout(fire, ms) : undefined;
}

/** ffmpeg's verdict on an input it could not read: its last line, cut short. */
function lastLine(stderr: string): string {
  // The input is always /dev/stdin or a pipe: its name says nothing to the client.
  const line = (stderr.trim().split('\n').at(-1)?.trim() ?? '').replace(/^(\/dev\/stdin|pipe:\d): /, '');
  return line.length > 200 ? `${line.slice(0, 197)}...` : line;
}

export class Codec {
  readonly info: CodecInfo;
  readonly #slots: Slots;
  readonly #timeoutMs: number;
  /** Children alive now (for tests and shutdown). */
  readonly children = new Set<ChildProcess>();

  constructor(info: CodecInfo, options: { timeoutMs: number; maxChildren?: number }) {
    this.info = info;
    this.#timeoutMs = options.timeoutMs;
    this.#slots = new Slots(options.maxChildren ?? Math.max(2, availableParallelism()));
  }

  get available(): boolean {
    return this.info.path !== undefined;
  }

  /** One line for the startup log: what this server can serve. */
  describe(): string {
    if (!this.info.path)
      return 'ffmpeg: not found: speech formats wav and pcm only; uploads must be WAV (install ffmpeg or set ffmpeg_path)';
    const speech = ['wav', 'pcm', ...this.info.encodings].join(', ');
    return `ffmpeg: ${this.info.path}: speech formats ${speech}; uploads in any format ffmpeg reads`;
  }

  #spawn(args: string[], stdin: 'pipe' | number): ChildProcess {
    const child = spawn(this.info.path!, ['-hide_banner', '-loglevel', 'error', '-nostdin', ...args], {
      stdio: [stdin, 'pipe', 'pipe'],
    });
    this.children.add(child);
    child.once('close', () => this.children.delete(child));
    // A pipe broken by a child that exited early is reported by 'close' with its code.
    child.stdin?.on('error', () => {});
    child.stdout!.on('error', () => {});
    child.stderr!.on('error', () => {});
    return child;
  }

  /**
   * Decodes any audio ffmpeg reads, from an open file descriptor (a regular file, so formats with
   * their index at the end, like MP4, can be read), to WAV bytes of float samples at the input's
   * own rate and channels. A corrupt, truncated or empty input is a 400 naming `field`.
   */
  async decodeToWav(fd: number, field: string, limits: DecodeLimits, signal: AbortSignal): Promise<Buffer> {
    if (!this.info.path) throw missingFfmpeg(field);
    const release = await this.#slots.take(signal);
    try {
      // /dev/stdin is opened through the file protocol: seekable, since fd 0 is the regular file.
      const child = this.#spawn(
        ['-i', '/dev/stdin', '-vn', '-map', '0:a:0', '-c:a', 'pcm_f32le', '-f', 'wav', 'pipe:1'],
        fd,
      );
      const { stdout, stderr, code, killedFor } = await this.#collect(child, limits.maxSeconds, signal);
      if (killedFor === 'size')
        throw new VoxdError(
          'E_AUDIO_TOO_LONG',
          `${field}: the decoded audio is longer than max_audio_seconds allows`,
        );
      if (killedFor === 'time')
        throw new VoxdError(
          'E_BUSY',
          `${field}: decoding took longer than ffmpeg_timeout_ms=${this.#timeoutMs}`,
        );
      if (code !== 0 || stdout.length <= 44) {
        const why = lastLine(stderr);
        throw new VoxdError(
          'E_INVALID_REQUEST',
          `${field}: the audio could not be decoded${why ? ` (ffmpeg: ${why})` : ' (no audio stream)'}`,
        );
      }
      return stdout;
    } finally {
      release();
    }
  }

  async #collect(
    child: ChildProcess,
    maxSeconds: number,
    signal: AbortSignal,
  ): Promise<{ stdout: Buffer; stderr: string; code: number | null; killedFor?: 'size' | 'time' }> {
    const parts: Buffer[] = [];
    let size = 0;
    let maxBytes = Number.POSITIVE_INFINITY;
    let stderr = '';
    let killedFor: 'size' | 'time' | undefined;
    const kill = () => child.kill('SIGKILL');
    const timer = afterMs(this.#timeoutMs, () => {
      killedFor = 'time';
      kill();
    });
    signal.addEventListener('abort', kill, { once: true });
    child.stdout!.on('data', (chunk: Buffer) => {
      if (size < 64) maxBytes = outputCap(Buffer.concat([...parts, chunk]), maxSeconds);
      size += chunk.length;
      if (size > maxBytes) {
        killedFor ??= 'size';
        kill();
        return;
      }
      parts.push(chunk);
    });
    child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      if (stderr.length < 4096) stderr += d;
    });
    const code = await new Promise<number | null>((resolve) => {
      child.once('error', () => resolve(-1));
      child.once('close', (c) => resolve(c));
    });
    clearTimeout(timer);
    signal.removeEventListener('abort', kill);
    signal.throwIfAborted();
    return { stdout: Buffer.concat(parts), stderr, code, killedFor };
  }

  /**
   * Starts an encoder for `format` taking float samples at `rate`/`channels`; its output goes to
   * `onData` as it is made. Write pieces, then `end()` resolves once every byte was delivered.
   */
  async openEncoder(
    format: SpeechEncoding,
    input: { sampleRate: number; channels: number },
    onData: (chunk: Buffer) => Promise<void> | void,
    signal: AbortSignal,
  ): Promise<Encoder> {
    if (!this.info.path || !this.info.encodings.includes(format))
      throw new VoxdError(
        'E_INVALID_REQUEST',
        `response_format: "${format}" needs ffmpeg with the ${ENCODINGS[format].encoder} encoder, which this server does not have (install ffmpeg or set ffmpeg_path)`,
      );
    const release = await this.#slots.take(signal);
    const { encoder, muxer, args } = ENCODINGS[format];
    // Raw input needs no probing (without -probesize/-analyzeduration ffmpeg waits for megabytes
    // before it encodes); -flush_packets sends each packet as it is made, not when 32 KB fill.
    const rawInput = ['-probesize', '32', '-analyzeduration', '0', '-f', 'f32le'];
    const rate = ['-ar', String(input.sampleRate), '-ac', String(input.channels)];
    const output = ['-c:a', encoder, ...args, '-flush_packets', '1', '-f', muxer, 'pipe:1'];
    const child = this.#spawn([...rawInput, ...rate, '-i', 'pipe:0', ...output], 'pipe');
    return new Encoder(child, onData, signal, this.#timeoutMs, release);
  }

  /** The whole audio encoded at once. */
  async encode(format: SpeechEncoding, audio: Audio, signal: AbortSignal): Promise<Buffer> {
    const parts: Buffer[] = [];
    const encoder = await this.openEncoder(format, audio, (chunk) => void parts.push(chunk), signal);
    await encoder.write(audio.samples);
    await encoder.end();
    return Buffer.concat(parts);
  }
}

export function missingFfmpeg(field: string, what = 'this audio'): VoxdError {
  return new VoxdError(
    'E_INVALID_REQUEST',
    `${field}: ${what} is not WAV; decoding it needs ffmpeg, which this server does not have (install ffmpeg or set ffmpeg_path)`,
  );
}

/** One running encoder: samples in, encoded bytes out through the callback, in order. */
export class Encoder {
  readonly #child: ChildProcess;
  readonly #done: Promise<void>;
  readonly #release: () => void;
  #stderr = '';

  constructor(
    child: ChildProcess,
    onData: (chunk: Buffer) => Promise<void> | void,
    signal: AbortSignal,
    timeoutMs: number,
    release: () => void,
  ) {
    this.#child = child;
    this.#release = release;
    const kill = () => child.kill('SIGKILL');
    signal.addEventListener('abort', kill, { once: true });
    child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      if (this.#stderr.length < 4096) this.#stderr += d;
    });
    // Output is handed on in order; a slow reader pauses the child through the pipe.
    let delivering = Promise.resolve();
    child.stdout!.on('data', (chunk: Buffer) => {
      child.stdout!.pause();
      delivering = delivering.then(() => onData(chunk)).finally(() => child.stdout!.resume());
      // Its failure (the client gone) is reported when the child closes; marked handled now, or
      // node would call it unhandled before then.
      delivering.catch(() => {});
    });
    let timedOut = false;
    const timer = afterMs(timeoutMs, () => {
      timedOut = true;
      kill();
    });
    this.#done = new Promise<void>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (code) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', kill);
        release();
        delivering.then(() => {
          if (signal.aborted) return reject(signal.reason);
          if (timedOut)
            return reject(
              new VoxdError('E_BUSY', `encoding took longer than ffmpeg_timeout_ms=${timeoutMs}`),
            );
          if (code !== 0)
            return reject(
              new VoxdError(
                'E_ENGINE',
                `ffmpeg failed to encode (${lastLine(this.#stderr) || `exit ${code}`})`,
              ),
            );
          resolve();
        }, reject);
      });
    });
    this.#done.catch(() => {});
  }

  /** Writes float samples; waits while the pipe is full. */
  async write(samples: Float32Array): Promise<void> {
    const stdin = this.#child.stdin!;
    if (stdin.destroyed) return;
    const bytes = Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
    if (!stdin.write(bytes))
      await new Promise<void>((resolve) => {
        stdin.once('drain', resolve);
        this.#child.once('close', resolve);
      });
  }

  /** Ends the input and waits for the last encoded byte. */
  async end(): Promise<void> {
    this.#child.stdin!.end();
    await this.#done;
  }

  /** Stops the encoder now (an error elsewhere, a client gone). */
  kill(): void {
    this.#child.kill('SIGKILL');
    this.#release();
  }
}
