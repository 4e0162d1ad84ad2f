/**
 * Compressed audio in and out through Debian's ffmpeg, run as a child process fed and read through
 * pipes. WAV and PCM never come here. Every child is counted against a cap (callers queue beyond
 * it, served fairly by owner: slots.ts), killed when its caller's signal aborts, bounded in time
 * (and a decode in time without output), a decode confined to audio containers (ffmpeg-input.ts)
 * and its output bounded in bytes as it arrives (decoded-audio.ts), so no upload can hold a
 * process, a pipe or memory for long, or make ffmpeg read anything but itself.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { VoxdError } from '../errors.js';
import { DecodedAudio, type Overrun } from './decoded-audio.js';
import { ACCEPTED_FORMATS, decodeArgs, lastLine, MAX_DECODE_RATE, refusedFormat } from './ffmpeg-input.js';
import { EncoderSpares } from './ffmpeg-spares.js';
import { flacInput, withStreamInfo } from './flac-streaminfo.js';
import { floats } from './pcm16-audio.js';
import { type SlotOwner, Slots } from './slots.js';
import type { Audio } from './types.js';

export const SPEECH_ENCODINGS = ['mp3', 'opus', 'aac', 'flac'] as const;
export type SpeechEncoding = (typeof SPEECH_ENCODINGS)[number];

/** The samples as raw f32le, without a copy: what every encoder but FLAC is fed. */
const F32LE = {
  format: 'f32le',
  pack: (samples: Float32Array) => Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength),
} as const;

/**
 * ffmpeg's encoder, muxer and the answer's Content-Type of each compressed speech format, and the
 * raw input it is fed. FLAC is fed 24-bit integers voxd made itself, so the samples it decodes to
 * are known here and its STREAMINFO can be completed (flac-streaminfo.ts).
 */
const ENCODINGS: Record<
  SpeechEncoding,
  {
    encoder: string;
    muxer: string;
    args: string[];
    contentType: string;
    input: { format: 'f32le' | 's32le'; pack: (samples: Float32Array) => Buffer };
  }
> = {
  mp3: {
    encoder: 'libmp3lame',
    muxer: 'mp3',
    args: ['-b:a', '128k'],
    contentType: 'audio/mpeg',
    input: F32LE,
  },
  opus: { encoder: 'libopus', muxer: 'ogg', args: ['-b:a', '64k'], contentType: 'audio/ogg', input: F32LE },
  aac: { encoder: 'aac', muxer: 'adts', args: ['-b:a', '128k'], contentType: 'audio/aac', input: F32LE },
  flac: {
    encoder: 'flac',
    muxer: 'flac',
    args: [],
    contentType: 'audio/flac',
    input: { format: 's32le', pack: flacInput },
  },
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

export interface DecodeLimits {
  /** Longest audio in seconds (0 = none): decoding stops once the output holds more. */
  maxSeconds: number;
  /** The most bytes the decoded (mono, float) samples may take: decoding stops beyond. */
  maxBytes: number;
  /** Whose request this is, for the fair share of the children (slots.ts). */
  owner?: SlotOwner;
}

/** A timer for ffmpeg_timeout_ms, where 0 means no limit (clearTimeout takes undefined). */
function afterMs(ms: number, fire: () => void): NodeJS.Timeout | undefined {
  return ms > 0 ? setTimeout(fire, ms) : undefined;
}

type Stop = 'time' | 'stall' | Overrun;

export interface CodecOptions {
  /** ffmpeg_timeout_ms: the longest a child may run, decode or encode (0 = no limit). */
  timeoutMs: number;
  /** ffmpeg_decode_stall_ms: the longest a decode may go without output (0 = no limit). */
  stallMs?: number;
  maxChildren?: number;
  /**
   * Encoders kept started ahead of need (ffmpeg-spares.ts): at most `max`, one per command line,
   * each retired after `idleMs` unused. Off when absent (a one-shot CLI run has no next request).
   */
  spares?: { max: number; idleMs: number };
}

/** What every owner's view of one codec shares. */
interface Shared {
  slots: Slots;
  children: Set<ChildProcess>;
  spares: EncoderSpares | undefined;
}

export class Codec {
  readonly info: CodecInfo;
  readonly #slots: Slots;
  readonly #timeoutMs: number;
  readonly #stallMs: number;
  /** Whose children this view starts (see `forOwner`); undefined: each its own. */
  readonly #owner: SlotOwner;
  /** Children alive now (for tests and shutdown), spares among them. */
  readonly children: Set<ChildProcess>;
  readonly #spares: EncoderSpares | undefined;

  /** Decodes and encodes waiting for a child's slot now (for tests). */
  get waiting(): number {
    return this.#slots.waiting;
  }

  constructor(info: CodecInfo, options: CodecOptions, shared?: Shared & { owner: SlotOwner }) {
    this.info = info;
    this.#timeoutMs = options.timeoutMs;
    this.#stallMs = options.stallMs ?? 0;
    this.#slots = shared?.slots ?? new Slots(options.maxChildren ?? Math.max(2, availableParallelism()));
    this.children = shared?.children ?? new Set();
    this.#owner = shared?.owner;
    this.#spares = shared
      ? shared.spares
      : options.spares && info.path
        ? new EncoderSpares((args) => this.#spawn(args, 'pipe'), options.spares.max, options.spares.idleMs)
        : undefined;
  }

  /** The same children and slots, taken for `owner` (a request's API key or client address). */
  forOwner(owner: SlotOwner): Codec {
    if (owner === this.#owner) return this;
    return new Codec(
      this.info,
      { timeoutMs: this.#timeoutMs, stallMs: this.#stallMs },
      { slots: this.#slots, children: this.children, spares: this.#spares, owner },
    );
  }

  /** Encoders started ahead of need, waiting now (for tests). */
  get spareCount(): number {
    return this.#spares?.size ?? 0;
  }

  /** Kills the spare encoders and starts no more (shutdown); running children finish as they do. */
  close(): void {
    this.#spares?.close();
  }

  /** The children's slots (for tests). */
  get slots(): Slots {
    return this.#slots;
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
    // A child that could not start is reported to whoever listens (a decode, an Encoder); a spare
    // has no one yet, and an unheard 'error' would end the process.
    child.on('error', () => {});
    // A pipe broken by a child that exited early is reported by 'close' with its code.
    child.stdin?.on('error', () => {});
    child.stdout!.on('error', () => {});
    child.stderr!.on('error', () => {});
    return child;
  }

  /**
   * Decodes an audio container ffmpeg reads (DECODE_DEMUXERS), from an open file descriptor (a
   * regular file, so formats with their index at the end, like MP4, can be read), to mono float
   * samples at the input's rate (at most 48 kHz), stopped as soon as they pass `limits`. A
   * playlist or any other format is a 400 naming `field`, as is a corrupt, truncated or empty input.
   */
  async decode(fd: number, field: string, limits: DecodeLimits, signal: AbortSignal): Promise<Audio> {
    if (!this.info.path) throw missingFfmpeg(field);
    const release = await this.#slots.take(limits.owner ?? this.#owner, signal);
    try {
      const child = this.#spawn(decodeArgs(), fd);
      const audio = new DecodedAudio(limits.maxSeconds, limits.maxBytes);
      const { stderr, code, stopped } = await this.#run(child, audio, signal);
      if (stopped === 'seconds')
        throw new VoxdError(
          'E_AUDIO_TOO_LONG',
          `${field}: the decoded audio is longer than max_audio_seconds=${limits.maxSeconds} (server or model)`,
          { param: field },
        );
      if (stopped === 'bytes')
        throw new VoxdError(
          'E_AUDIO_TOO_LONG',
          `${field}: the decoded audio is larger than max_request_body_bytes=${limits.maxBytes} (4 bytes a mono sample at the input's rate, at most ${MAX_DECODE_RATE} Hz: ${describeSeconds(limits.maxBytes / 4 / (audio.sampleRate || MAX_DECODE_RATE))})`,
          { param: field },
        );
      if (stopped === 'time')
        throw new VoxdError(
          'E_BUSY',
          `${field}: decoding took longer than ffmpeg_timeout_ms=${this.#timeoutMs}`,
        );
      if (stopped === 'stall')
        throw new VoxdError(
          'E_INVALID_REQUEST',
          `${field}: ffmpeg decoded no audio from it for ffmpeg_decode_stall_ms=${this.#stallMs}`,
          { param: field },
        );
      const refused = refusedFormat(stderr);
      if (refused)
        throw new VoxdError(
          'E_INVALID_REQUEST',
          `${field}: the format "${refused}" is not accepted; audio files only: ${ACCEPTED_FORMATS}`,
          { param: field },
        );
      if (code === 0 && audio.started && audio.frames === 0)
        throw new VoxdError('E_INVALID_REQUEST', `${field}: the audio holds no samples once decoded`, {
          param: field,
        });
      if (code !== 0 || !audio.started) {
        const why = lastLine(stderr);
        throw new VoxdError(
          'E_INVALID_REQUEST',
          `${field}: the audio could not be decoded${why ? ` (ffmpeg: ${why})` : ' (no audio stream)'}`,
          { param: field },
        );
      }
      return audio.take();
    } finally {
      release();
    }
  }

  /**
   * Runs a decode to its end, its output taken by `audio` as it comes; the child is killed at once
   * when a budget is passed, at ffmpeg_timeout_ms, after ffmpeg_decode_stall_ms without output, or
   * when `signal` aborts.
   */
  async #run(
    child: ChildProcess,
    audio: DecodedAudio,
    signal: AbortSignal,
  ): Promise<{ stderr: string; code: number | null; stopped?: Stop }> {
    let stderr = '';
    let stopped: Stop | undefined;
    let failed: unknown;
    const kill = () => child.kill('SIGKILL');
    const stop = (why: Stop) => {
      stopped ??= why;
      kill();
    };
    const timer = afterMs(this.#timeoutMs, () => stop('time'));
    // Armed again by every piece of output: a decode that makes no audio gives its slot back soon.
    let stall = afterMs(this.#stallMs, () => stop('stall'));
    signal.addEventListener('abort', kill, { once: true });
    child.stdout!.on('data', (chunk: Buffer) => {
      if (stopped || failed) return;
      clearTimeout(stall);
      stall = afterMs(this.#stallMs, () => stop('stall'));
      try {
        if (!audio.push(chunk)) stop(audio.overrun!);
      } catch (err) {
        failed = err;
        kill();
      }
    });
    child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      if (stderr.length < 4096) stderr += d;
    });
    const code = await new Promise<number | null>((resolve) => {
      child.once('error', () => resolve(-1));
      child.once('close', (c) => resolve(c));
    });
    clearTimeout(timer);
    clearTimeout(stall);
    signal.removeEventListener('abort', kill);
    signal.throwIfAborted();
    if (failed && !stopped) throw failed;
    return { stderr, code, stopped };
  }

  /**
   * Starts an encoder for `format` taking float samples at `rate`/`channels`; its output goes to
   * `onData` as it is made. Write pieces, then `end()` resolves once every byte was delivered.
   * Made through a pipe, a FLAC stream declares no length (see `encode`).
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
        { param: 'response_format' },
      );
    const release = await this.#slots.take(this.#owner, signal);
    const { encoder, muxer, args, input: raw } = ENCODINGS[format];
    // Raw input needs no probing (without -probesize/-analyzeduration ffmpeg waits for megabytes
    // before it encodes); -flush_packets sends each packet as it is made, not when 32 KB fill.
    const rawInput = ['-probesize', '32', '-analyzeduration', '0', '-f', raw.format];
    const rate = ['-ar', String(input.sampleRate), '-ac', String(input.channels)];
    const output = ['-c:a', encoder, ...args, '-flush_packets', '1', '-f', muxer, 'pipe:1'];
    const argv = [...rawInput, ...rate, '-i', 'pipe:0', ...output];
    let child: ChildProcess;
    try {
      child = this.#spares ? this.#spares.take(argv) : this.#spawn(argv, 'pipe');
    } catch (err) {
      release();
      throw err;
    }
    return new Encoder(child, onData, signal, this.#timeoutMs, release, raw.pack);
  }

  /**
   * The whole audio encoded at once. Held whole, a FLAC gets the sample count and MD5 that ffmpeg,
   * writing to a pipe, could not go back to write.
   */
  async encode(format: SpeechEncoding, audio: Audio, signal: AbortSignal): Promise<Buffer> {
    const parts: Buffer[] = [];
    const encoder = await this.openEncoder(format, audio, (chunk) => void parts.push(chunk), signal);
    const samples = floats(audio);
    await encoder.write(samples);
    await encoder.end();
    const whole = Buffer.concat(parts);
    return format === 'flac' ? withStreamInfo(whole, samples, audio.channels) : whole;
  }
}

/** "23.3 min", "70 s": how long the byte budget lasts, for its message. */
function describeSeconds(seconds: number): string {
  return seconds >= 120 ? `${(seconds / 60).toFixed(1)} min` : `${Math.floor(seconds)} s`;
}

export function missingFfmpeg(field: string, what = 'this audio'): VoxdError {
  return new VoxdError(
    'E_INVALID_REQUEST',
    `${field}: ${what} is not WAV; decoding it needs ffmpeg, which this server does not have (install ffmpeg or set ffmpeg_path)`,
    { param: field },
  );
}

/** One running encoder: samples in, encoded bytes out through the callback, in order. */
export class Encoder {
  readonly #child: ChildProcess;
  readonly #done: Promise<void>;
  readonly #release: () => void;
  /** The samples as the raw input ffmpeg was told to read. */
  readonly #pack: (samples: Float32Array) => Buffer;
  #stderr = '';

  constructor(
    child: ChildProcess,
    onData: (chunk: Buffer) => Promise<void> | void,
    signal: AbortSignal,
    timeoutMs: number,
    release: () => void,
    pack: (samples: Float32Array) => Buffer,
  ) {
    this.#child = child;
    this.#release = release;
    this.#pack = pack;
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
    if (!stdin.write(this.#pack(samples)))
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
