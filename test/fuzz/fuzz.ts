/**
 * A seeded fuzzer for voxd's HTTP surface (`npm run fuzz -- --cases N [--seed S] [--case K]`).
 *
 * One voxd runs in-process on loopback with fixture models of every task; each case is raw bytes
 * written to a fresh TCP connection, built from valid requests and then mutated: HTTP framing, JSON
 * bodies of every POST route, multipart uploads, WAV headers (as uploads and as base64), media for
 * ffmpeg (playlists and indirection formats, real containers with absurd rates and channel counts:
 * media.ts), live PCM bodies, WebSocket sessions on the realtime API, the bridge and Deepgram's
 * `/v1/listen` and `/v1/speak` (websocket.ts), Wyoming events (wyoming.ts), and sessions of real
 * clients that leave, stall or misbehave mid-turn on realtime, Wyoming, the bridge and Deepgram's
 * sockets (sessions.ts, deepgram-sessions.ts). A case passes when the server answers 2xx/4xx/503 (or closes the connection) within
 * its deadline; a 5xx other than 503, or silence past the deadline, is a finding. Every
 * `--check-every` cases and at the end the server must still be healthy and hold nothing: no active
 * or queued requests, file descriptors and child processes back near the baseline.
 *
 * Every case draws from its own PRNG seeded by (seed, case index), so a finding replays alone with
 * `npm run fuzz -- --seed S --case K` whatever ran before it or beside it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { encodeWav, wavHeader } from '../../src/audio/wav-encode.js';
import { mulberry32 } from '../helpers/prng.js';
import { parseResponse } from '../helpers/raw-http.js';
import { fixtureModel, fliteSpeech, request, startServer, type TestServer } from '../helpers/voxd.js';
import { mediaInput, mediaProblem } from './media.js';
import {
  endLeftovers,
  lateProblems,
  leftoverCount,
  leftoverProblems,
  SESSION_MODELS,
  type SessionOutcome,
  type SessionTarget,
  sessionCase,
} from './sessions.js';
import { websocketCase } from './websocket.js';
import { wyomingCase } from './wyoming.js';

// ---------------------------------------------------------------- PRNG

export class Rng {
  readonly next: () => number;
  constructor(seed: number) {
    this.next = mulberry32(seed);
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  range(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  bytes(n: number): Buffer {
    const out = Buffer.alloc(n);
    for (let i = 0; i < n; i++) out[i] = this.int(256);
    return out;
  }
}

/** The case's own seed: a hash of the run seed and the index, so neighbouring cases differ fully. */
function caseSeed(seed: number, index: number): number {
  let h = (seed ^ 0x9e3779b9) >>> 0;
  h = Math.imul(h ^ index, 0x85ebca6b) >>> 0;
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

// ---------------------------------------------------------------- server under test

const MODELS = {
  asr: 'fz-asr',
  tts: 'fz-tts',
  diar: 'fz-diar',
  vad: 'fz-vad',
  asrLive: 'fz-asr-live',
  ttsLive: 'fz-tts-live',
} as const;

const BODY_LIMIT = 1024 * 1024;
const BODY_TIMEOUT_MS = 250;

/** Each target's Wyoming port by its URL, for a session case run without a prepared target. */
const wyomingPorts = new Map<string, number>();

export async function startTarget(): Promise<TestServer> {
  const server = await startServer(
    {
      ui_management: true,
      max_request_body_bytes: BODY_LIMIT,
      body_timeout_ms: BODY_TIMEOUT_MS,
      max_input_chars: 2000,
      busy_timeout_ms: 2000,
      // The close at the end must keep to it (plus its grace): CLOSE_DEADLINE_MS is well past both.
      shutdown_timeout_ms: 5000,
      // send_timeout_ms: a session case's client that stops reading frees its slot within the
      // batch check's wait (the default, 30 s, would outlast it).
      live_ingest: {
        idle_timeout_ms: 250,
        total_timeout_ms: 3000,
        max_body_bytes: 256 * 1024,
        send_timeout_ms: 2000,
      },
      // Short, so that what a session case leaves to the server's timeouts (a client gone silent
      // mid-turn, an idle socket) ends within the batch check's wait.
      realtime_idle_timeout_ms: 1500,
      wyoming_idle_timeout_ms: 1500,
      bridge_idle_timeout_ms: 1500,
      deepgram_idle_timeout_ms: 1500,
      // Deepgram's model names (nova-3, aura-2-thalia-en) stand for the real engines.
      deepgram_listen_model: SESSION_MODELS.live,
      deepgram_speak_model: SESSION_MODELS.tts,
      // audio.cpp's WebSocket bridge, which the WebSocket category drives next to /v1/realtime.
      frontend_listener: 'websocket',
      // The Wyoming listener, which the Wyoming category drives.
      wyoming_port: 0,
      models: [
        fixtureModel(MODELS.asr, { slots: 2 }),
        fixtureModel(MODELS.tts, { task: 'tts' }),
        fixtureModel(MODELS.diar, { task: 'diar' }),
        fixtureModel(MODELS.vad, { task: 'vad' }),
        fixtureModel(MODELS.asrLive, { mode: 'streaming' }),
        fixtureModel(MODELS.ttsLive, { task: 'tts', mode: 'streaming' }),
        // The real VAD, for realtime sessions' server VAD (chunking_vad_model's default id).
        { id: 'silero-vad', family: 'silero_vad', task: 'vad', lazy: true },
        // A real live-input engine, which hears a turn as it is spoken (the session cases' turns
        // go live on it), and real speech for it to hear and for the synthesis cases.
        // One slot: a second session's turn queues behind the first (and its client may leave
        // there). Each slot is a runner process whose load costs about a second of CPU, paid
        // again after every unload-all of the JSON cases.
        { id: SESSION_MODELS.live, family: 'pocketsphinx_asr', task: 'asr', mode: 'streaming', lazy: true },
        { id: SESSION_MODELS.tts, family: 'flite_tts', task: 'tts', mode: 'streaming', lazy: true },
      ],
    },
    { parallel: true },
  );
  wyomingPorts.set(server.url, server.voxd.wyoming!.port);
  return server;
}

// ---------------------------------------------------------------- building blocks

/** A valid 16-bit PCM WAV (44-byte header, as the mutators expect): a short tone, `channels` interleaved. */
export function wav(rate = 16000, channels = 1, frames = 800): Buffer {
  const samples = Float32Array.from(
    { length: frames * channels },
    (_, i) => (8000 / 32768) * Math.sin(i / 7),
  );
  return encodeWav({ samples, sampleRate: rate, channels });
}

const U32_EDGES = [0, 1, 2, 15, 16, 17, 18, 40, 44, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff];
const U16_EDGES = [0, 1, 2, 3, 8, 16, 24, 32, 64, 0x7fff, 0xfffe, 0xffff];

/** A WAV whose header fields lie: sizes, rates, channels, bits, format, chunk ids, truncation. */
export function mutateWav(rng: Rng, base: Buffer): Buffer {
  const out = Buffer.from(base);
  const edits = rng.range(1, 3);
  for (let i = 0; i < edits; i++) {
    switch (rng.int(11)) {
      case 0:
        out.writeUInt32LE(rng.pick(U32_EDGES), 4); // RIFF size
        break;
      case 1:
        out.writeUInt32LE(rng.pick(U32_EDGES), 16); // fmt chunk size
        break;
      case 2:
        out.writeUInt16LE(rng.pick([0, 1, 2, 3, 6, 7, 0xfffe, 0xffff]), 20); // format tag
        break;
      case 3:
        out.writeUInt16LE(rng.pick(U16_EDGES), 22); // channels
        break;
      case 4:
        out.writeUInt32LE(rng.pick([...U32_EDGES, 8000, 44100, 384001, 999]), 24); // sample rate
        break;
      case 5:
        out.writeUInt32LE(rng.pick(U32_EDGES), 28); // byte rate
        break;
      case 6:
        out.writeUInt16LE(rng.pick(U16_EDGES), 32); // block align
        break;
      case 7:
        out.writeUInt16LE(rng.pick(U16_EDGES), 34); // bits per sample
        break;
      case 8:
        out.writeUInt32LE(rng.pick(U32_EDGES), 40); // data size
        break;
      case 9: {
        const at = rng.pick([0, 8, 12, 36]);
        rng.bytes(4).copy(out, at); // a chunk id
        break;
      }
      default:
        return out.subarray(0, rng.int(out.length)); // truncated anywhere
    }
  }
  return out;
}

function someWav(rng: Rng): Buffer {
  const base = wav(rng.pick([8000, 16000, 22050, 48000]), rng.pick([1, 1, 2]), rng.pick([0, 1, 160, 800]));
  return rng.chance(0.5) ? mutateWav(rng, base) : base;
}

const STRINGS = [
  '',
  ' ',
  'NaN',
  'Infinity',
  '-Infinity',
  '1e400',
  '-0',
  '0x10',
  'null',
  'true',
  '__proto__',
  'constructor',
  '../../../etc/passwd',
  '/etc/passwd',
  '%00',
  '\u0000',
  '\ud800',
  'é'.repeat(3),
  '{"a":1}',
  'data:audio/wav;base64,',
  'a'.repeat(5000),
];

const NUMBERS = [0, -1, 1, 0.5, -0.5, 1e308, -1e308, 2 ** 53 + 1, 4294967296, 1e-320, 65535, 65536];

/** A JSON value of any type, kept shallow except when asked to nest. */
function anyValue(rng: Rng, depth = 0): unknown {
  switch (rng.int(depth > 2 ? 4 : 6)) {
    case 0:
      return rng.pick(STRINGS);
    case 1:
      return rng.pick(NUMBERS);
    case 2:
      return rng.pick([true, false, null]);
    case 3:
      return rng.int(1000);
    case 4:
      return Array.from({ length: rng.int(4) }, () => anyValue(rng, depth + 1));
    default:
      return Object.fromEntries(
        Array.from({ length: rng.int(4) }, () => [rng.pick(KEYS), anyValue(rng, depth + 1)]),
      );
  }
}

const KEYS = [
  'a',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  '',
  'x'.repeat(300),
];

/**
 * Fixture options that hang, spin, crash, fail, wait or leak on purpose (docs/fixture-engine.md): a
 * 500, a stall or memory they cause is the fixture doing its job, not a finding, so no body may carry them.
 */
const FAULT_OPTIONS = new Set([
  'run_ms',
  'run_gate',
  'prepare_fail',
  'run_fail',
  'hang',
  'crash',
  'spin',
  'runner_gate',
  'leak_kb',
  'chunk_ms',
  'chunk_gate',
  'chunks',
  'load_ms',
  'load_gate',
  'fail_load',
  'null_primary',
  'fail_clone_at',
  'teardown_ms',
  'teardown_gate',
  'footprint_mb',
]);

/** Removes fault options wherever they sit (options, load options, defaults, nested requests). */
function stripFaults(value: unknown, depth = 0): unknown {
  if (depth > 40 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => stripFaults(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    if (FAULT_OPTIONS.has(key)) continue;
    const v = (value as Record<string, unknown>)[key];
    Object.defineProperty(out, key, {
      value: stripFaults(v, depth + 1),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

/** Mutates a JSON object: wrong types, edge numbers, removed or unknown keys, odd keys. */
function mutateObject(rng: Rng, obj: Record<string, unknown>, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = { ...obj };
  const keys = Object.keys(out);
  const edits = rng.range(1, 3);
  for (let i = 0; i < edits; i++) {
    const key = keys.length > 0 ? rng.pick(keys) : 'x';
    switch (rng.int(7)) {
      case 0:
        delete out[key];
        break;
      case 1:
        out[key] = anyValue(rng);
        break;
      case 2:
        Object.defineProperty(out, rng.pick(KEYS), {
          value: anyValue(rng),
          enumerable: true,
          writable: true,
          configurable: true,
        });
        break;
      case 3:
        out[`unknown_${rng.int(5)}`] = anyValue(rng);
        break;
      case 4: {
        const v = out[key];
        if (v && typeof v === 'object' && !Array.isArray(v) && depth < 3)
          out[key] = mutateObject(rng, v as Record<string, unknown>, depth + 1);
        else out[key] = rng.pick(STRINGS);
        break;
      }
      case 5:
        out[key] = rng.pick(NUMBERS);
        break;
      default:
        out[key] = [out[key]];
    }
  }
  return out;
}

/** JSON text JSON.stringify cannot write: 1e400, deep nesting, duplicate keys, bad escapes, cuts. */
function mutateJsonText(rng: Rng, text: string): string {
  switch (rng.int(8)) {
    case 0:
      return text.replace(/:\s*(\d+)/, ':1e400');
    case 1: {
      const d = rng.pick([10, 63, 64, 65, 200, 5000]);
      return text.replace(/}$/, `,"deep":${'['.repeat(d)}${']'.repeat(d)}}`);
    }
    case 2:
      return text.replace(/^{/, '{"model":1,');
    case 3:
      return text.slice(0, rng.int(text.length));
    case 4:
      return text.replace(/"$|"(?=[,}])/, '\\ud800"');
    case 5:
      return `${text} trailing`;
    case 6:
      return rng.pick(['', 'null', '[]', '"str"', '1', 'NaN', '{', '\u0000', '{"a":01}', '{"a":-}']);
    default: {
      const at = rng.int(text.length + 1);
      return text.slice(0, at) + String.fromCharCode(rng.int(128)) + text.slice(at);
    }
  }
}

// ---------------------------------------------------------------- requests

interface RawRequest {
  method: string;
  target: string;
  headers: [string, string][];
  body: Buffer;
}

function encode(req: RawRequest): Buffer {
  const head = `${req.method} ${req.target} HTTP/1.1\r\n${req.headers.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), req.body]);
}

function jsonRequest(target: string, body: string | Buffer): RawRequest {
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  return {
    method: 'POST',
    target,
    headers: [
      ['Host', 'voxd'],
      ['Content-Type', 'application/json'],
      ['Content-Length', String(bytes.length)],
    ],
    body: bytes,
  };
}

/** The valid body of each JSON POST route, before mutation. */
function validJsonBodies(rng: Rng): [string, Record<string, unknown>][] {
  const wavB64 = wav(16000, 1, 160).toString('base64');
  const fzId = `fz-dyn-${rng.int(4)}`;
  return [
    [
      '/v1/audio/speech',
      { model: MODELS.tts, input: 'hello', voice: 'alloy', response_format: 'wav', speed: 1 },
    ],
    ['/v1/audio/speech', { model: MODELS.ttsLive, input: 'hi', stream: true }],
    ['/v1/audio/transcriptions', { model: MODELS.asr, audio: 'missing.wav', response_format: 'json' }],
    ['/v1/tasks/run', { model: MODELS.asr, request: { text: 'x', audio_base64: wavB64, options: { a: 1 } } }],
    ['/v1/tasks/run', { model: MODELS.vad, audio_base64: wavB64 }],
    ['/v1/tasks/run', { model: MODELS.diar, request: { audio_base64: `data:audio/wav;base64,${wavB64}` } }],
    ['/v1/tasks/run', { model: MODELS.tts, text: 'x', seed: 3, busy_timeout_ms: 100 }],
    ['/v1/tasks/stream', { model: MODELS.asrLive, request: { text: 'hi', language: 'en' } }],
    ['/v1/tasks/stream', { model: MODELS.ttsLive, text: 'hi', stream_format: 'sse' }],
    [
      '/v1/tasks/batch',
      { model: MODELS.asr, requests: [{ text: 'a' }, { text: 'b', audio_base64: wavB64 }] },
    ],
    [
      '/v1/models/load',
      { id: fzId, family: 'fixture', path: '.', task: rng.pick(['asr', 'tts', 'vad', 'diar']) },
    ],
    ['/v1/models/unload', { id: fzId }],
    ['/v1/tasks/unload_models', { model_ids: [fzId, 'zzz'] }],
    ['/v1/tasks/unload_all_models', {}],
    ['/v1/ui/models-root', { path: 'models' }],
    ['/v1/ui/browse-directories', { path: '' }],
    ['/v1/ui/path-status', { path: 'models' }],
    ['/v1/ui/models/install', { id: 'fz-pkg', url: 'http://127.0.0.1:1/fz.tar.gz' }],
    ['/v1/ui/models/install/stop', { id: 'fz-pkg' }],
    ['/v1/ui/models/clean-partial', { id: 'fz-pkg' }],
    ['/v1/ui/models/delete', { id: 'fz-pkg' }],
  ];
}

/**
 * Keeps a mutated management body from reaching outside the test: models registered only under
 * fz-dyn-* ids (the fixed models keep their config), the models root only under the test folder,
 * installs only from a refused loopback port (never the catalogue's real downloads).
 */
function confine(route: string, body: unknown): unknown {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return body;
  const obj = { ...(body as Record<string, unknown>) };
  if (route === '/v1/models/load' && typeof obj['id'] === 'string' && !obj['id'].startsWith('fz-dyn-'))
    obj['id'] = `fz-dyn-${obj['id'].length % 4}`;
  if (route === '/v1/ui/models-root' && typeof obj['path'] === 'string')
    obj['path'] = `fz-root/${obj['path'].replace(/[^a-z0-9]/gi, '').slice(0, 20)}`;
  if (route === '/v1/ui/models/install') obj['url'] = 'http://127.0.0.1:1/fz.tar.gz';
  return obj;
}

function jsonCase(rng: Rng): Generated {
  const [route, valid] = rng.pick(validJsonBodies(rng));
  let body: unknown = valid;
  if (rng.chance(0.85)) body = mutateObject(rng, valid);
  body = confine(route, stripFaults(body));
  let text = JSON.stringify(body) ?? 'null';
  if (rng.chance(0.3)) text = mutateJsonText(rng, text);
  return { category: `json ${route}`, request: encode(jsonRequest(route, text)) };
}

// ---------------------------------------------------------------- multipart

function part(boundary: string, name: string, value: string | Buffer, filename?: string): Buffer {
  const disposition = `form-data; name="${name}"${filename === undefined ? '' : `; filename="${filename}"`}`;
  const type = filename === undefined ? '' : 'Content-Type: audio/wav\r\n';
  return Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n${type}\r\n`, 'latin1'),
    typeof value === 'string' ? Buffer.from(value, 'utf8') : value,
    Buffer.from('\r\n', 'latin1'),
  ]);
}

const FORM_FIELDS: [string, () => string][] = [
  ['language', () => 'en'],
  ['prompt', () => 'context'],
  ['response_format', () => 'verbose_json'],
  ['timestamp_granularities[]', () => 'word'],
  ['temperature', () => '0.5'],
  ['stream', () => 'true'],
  ['busy_timeout_ms', () => '100'],
  ['options', () => '{"beam":2}'],
  ['chunking_strategy', () => 'auto'],
  ['include[]', () => 'logprobs'],
];

function multipartCase(rng: Rng): Generated {
  const route = rng.pick([
    '/v1/audio/transcriptions',
    '/v1/audio/transcriptions',
    '/v1/audio/transcriptions/details',
    '/v1/batches/transcriptions',
  ]);
  const boundary = rng.chance(0.9) ? `fz${rng.int(1e9)}` : rng.pick(['', '"q"', 'a'.repeat(80), '--', ' x']);
  const parts: Buffer[] = [];
  const model = rng.chance(0.9) ? rng.pick([MODELS.asr, MODELS.diar, MODELS.tts, 'zzz']) : rng.pick(STRINGS);
  if (rng.chance(0.9)) parts.push(part(boundary, 'model', model));
  const files = rng.chance(0.1) ? 0 : rng.range(1, route.startsWith('/v1/batches') ? 3 : 1);
  for (let i = 0; i < files; i++)
    parts.push(part(boundary, 'file', someWav(rng), rng.pick(['a.wav', 'a', 'a.mp3', '', '../x.wav'])));
  for (const [name, value] of FORM_FIELDS)
    if (rng.chance(0.2))
      parts.push(part(boundary, name, rng.chance(0.6) ? value() : JSON.stringify(anyValue(rng))));
  if (rng.chance(0.1)) parts.push(part(boundary, 'model', model)); // a duplicate field
  if (rng.chance(0.05)) parts.push(part(boundary, 'x'.repeat(rng.pick([200, 5000, 20000])), 'v'));
  if (rng.chance(0.05)) parts.push(part(boundary, rng.pick(['', '"', '\r\n', 'ïnvalid']), 'v'));
  for (let i = parts.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [parts[i], parts[j]] = [parts[j]!, parts[i]!];
  }
  let body = Buffer.concat([...parts, Buffer.from(`--${boundary}--\r\n`, 'latin1')]);
  switch (rng.int(8)) {
    case 0:
      body = body.subarray(0, rng.int(body.length)); // cut short: no closing boundary
      break;
    case 1:
      body = Buffer.from(body.toString('latin1').replaceAll(`--${boundary}--`, `--${boundary}`), 'latin1');
      break;
    case 2: {
      const at = rng.int(body.length);
      body = Buffer.concat([body.subarray(0, at), rng.bytes(rng.range(1, 16)), body.subarray(at)]);
      break;
    }
    default:
      break;
  }
  const type = rng.chance(0.9)
    ? `multipart/form-data; boundary=${boundary}`
    : rng.pick([
        'multipart/form-data',
        'multipart/form-data; boundary=',
        'multipart/mixed; boundary=x',
        'text/plain',
      ]);
  const req: RawRequest = {
    method: 'POST',
    target: route,
    headers: [
      ['Host', 'voxd'],
      ['Content-Type', type],
      ['Content-Length', String(body.length)],
    ],
    body,
  };
  return { category: `multipart ${route}`, request: encode(req) };
}

// ---------------------------------------------------------------- WAV as base64

function wavCase(rng: Rng): Generated {
  const model = rng.pick([MODELS.asr, MODELS.vad, MODELS.diar]);
  const audio = mutateWav(
    rng,
    wav(rng.pick([8000, 16000, 44100]), rng.pick([1, 2]), rng.pick([1, 160, 1600])),
  );
  const b64 = rng.chance(0.2)
    ? `data:audio/wav;base64,${audio.toString('base64')}`
    : audio.toString('base64');
  const text = JSON.stringify({ model, request: { audio_base64: b64 } });
  return { category: 'wav base64', request: encode(jsonRequest('/v1/tasks/run', text)) };
}

// ---------------------------------------------------------------- media for ffmpeg

function mediaCase(rng: Rng): Generated {
  const media = mediaInput(rng);
  const check = (outcome: Outcome) => mediaProblem(media, outcome.status, outcome.body ?? '');
  if (rng.chance(0.5)) {
    const text = JSON.stringify({ model: MODELS.asr, audio_base64: media.bytes.toString('base64') });
    return { category: 'media base64', request: encode(jsonRequest('/v1/tasks/run', text)), check };
  }
  const boundary = `fz${rng.int(1e9)}`;
  const body = Buffer.concat([
    part(boundary, 'model', MODELS.asr),
    part(boundary, 'file', media.bytes, media.name),
    Buffer.from(`--${boundary}--\r\n`),
  ]);
  const req: RawRequest = {
    method: 'POST',
    target: '/v1/audio/transcriptions',
    headers: [
      ['Host', 'fuzz'],
      ['Content-Type', `multipart/form-data; boundary=${boundary}`],
      ['Content-Length', String(body.length)],
    ],
    body,
  };
  return { category: 'media multipart', request: encode(req), check };
}

// ---------------------------------------------------------------- live PCM

function chunkOf(rng: Rng, data: Buffer): Buffer {
  const sizeLine = rng.chance(0.9)
    ? data.length.toString(16)
    : rng.pick(['zz', '-1', 'ffffffffffffffff', '', `${data.length.toString(16)};ext=1`, ' 1', '0x10']);
  return Buffer.concat([Buffer.from(`${sizeLine}\r\n`, 'latin1'), data, Buffer.from('\r\n', 'latin1')]);
}

function liveCase(rng: Rng): Generated {
  const speech = rng.chance(0.3);
  const params = new URLSearchParams();
  if (rng.chance(0.95)) params.set('model', speech ? MODELS.ttsLive : rng.pick([MODELS.asrLive, MODELS.asr]));
  if (rng.chance(0.5))
    params.set('sample_rate', rng.pick(['16000', '8000', '999', '384001', '16000junk', '']));
  if (rng.chance(0.4)) params.set('channels', rng.pick(['1', '2', '0', '17', '3']));
  const format = rng.chance(0.5) ? rng.pick(['s16le', 'f32le', 'u8', '']) : 's16le';
  params.set('sample_format', format);
  if (speech) params.set('input', rng.pick(['hello', '', 'a'.repeat(3000)]));
  if (rng.chance(0.2)) params.set('busy_timeout_ms', rng.pick(['0', '50', '-1', 'x']));
  const route = speech ? '/v1/audio/speech/live' : '/v1/audio/transcriptions/live';
  const chunks: Buffer[] = [];
  const count = rng.int(6);
  for (let i = 0; i < count; i++) {
    const size = rng.pick([0, 1, 2, 3, 4, 5, 7, 160, 1601, 4096]);
    chunks.push(chunkOf(rng, size === 0 ? Buffer.alloc(0) : rng.bytes(size)));
  }
  // Most bodies end properly; some stop (an idle body the live limits must end) or are cut.
  const ending = rng.int(10);
  if (ending < 7) chunks.push(Buffer.from('0\r\n\r\n', 'latin1'));
  else if (ending === 7) chunks.push(Buffer.from('0\r\n', 'latin1'));
  const chunked = rng.chance(0.92);
  const body = Buffer.concat(chunks);
  const headers: [string, string][] = [['Host', 'voxd']];
  if (chunked) headers.push(['Transfer-Encoding', 'chunked']);
  else headers.push(['Content-Length', String(rng.int(8))]);
  const req: RawRequest = { method: 'POST', target: `${route}?${params}`, headers, body };
  return { category: `live ${route}`, request: encode(req), pieces: rng.chance(0.5) ? rng.range(2, 5) : 1 };
}

// ---------------------------------------------------------------- HTTP framing

const METHODS = [
  'GET',
  'POST',
  'PUT',
  'DELETE',
  'OPTIONS',
  'HEAD',
  'PATCH',
  'CONNECT',
  'TRACE',
  'get',
  'FOO',
  '',
  'P OST',
];
const TARGETS = [
  '/health',
  '/ready',
  '/v1/models',
  '/v1/models?include_params=true&include_session_options=1',
  '/v1/audio/voices',
  '/v1/audio/speech',
  '/v1/tasks/run',
  '/v1/ui/models/config?id=fz-asr',
  '/v1/ui/models/config?id=',
  '/v1/ui/models/install-status?id=..',
  '/v1/ui/models/package-sizes',
  '/v1/ui/models/installed',
  '/v1/ui/models-root',
  '/openapi.json',
  '/metrics',
  '*',
  '',
  'http://evil/v1/models',
  '//v1//models',
  '/v1/models/../../etc/passwd',
  '/%ff%fe',
  '/%',
  '/v1/models?%zz=1',
  `/${'a'.repeat(20000)}`,
  '/v1/tasks/run?busy_timeout_ms=1e400',
  '/\u0000',
];

function framingCase(rng: Rng): Generated {
  const body = Buffer.from(
    JSON.stringify(stripFaults({ model: rng.pick(Object.values(MODELS)), text: 'x', input: 'hi' })),
  );
  const headers: [string, string][] = [];
  if (rng.chance(0.9))
    headers.push(['Host', rng.chance(0.9) ? 'voxd' : rng.pick(['', 'a b', 'x'.repeat(300)])]);
  if (rng.chance(0.5)) headers.push(['Host', 'second']);
  if (rng.chance(0.7))
    headers.push([
      'Content-Type',
      rng.pick(['application/json', 'text/plain', '', 'application/json; charset=latin1']),
    ]);
  let payload = body;
  let early = false;
  switch (rng.int(12)) {
    case 0:
      headers.push(['Content-Length', String(body.length)]);
      break;
    case 1:
      headers.push([
        'Content-Length',
        rng.pick(['-1', '1e3', ' 12', '0x10', '99999999999999999999', 'abc', '']),
      ]);
      break;
    case 2:
      headers.push(['Content-Length', String(body.length)], ['Content-Length', String(body.length + 1)]);
      break;
    case 3:
      headers.push(['Content-Length', String(body.length)], ['Transfer-Encoding', 'chunked']);
      payload = Buffer.concat([chunkOf(rng, body), Buffer.from('0\r\n\r\n')]);
      break;
    case 4:
      headers.push([
        'Transfer-Encoding',
        rng.pick(['chunked', 'gzip, chunked', 'chunked, gzip', 'identity', 'xchunked']),
      ]);
      payload = Buffer.concat([
        chunkOf(rng, body),
        Buffer.from(rng.pick(['0\r\n\r\n', '0\r\n', '', 'ffffffff\r\n'])),
      ]);
      break;
    case 5:
      headers.push(['Content-Length', String(body.length + rng.range(1, 100))]); // promises more than it sends
      break;
    case 6:
      headers.push(['Content-Length', String(rng.pick([BODY_LIMIT + 1, 2 ** 40]))]);
      break;
    case 7:
      headers.push(['X-Big', 'v'.repeat(rng.pick([8000, 17000, 70000]))]);
      break;
    case 8:
      headers.push([
        rng.pick(['Bad Name', 'X:Y', '', 'Ü', 'X\u0001']),
        rng.pick(['v', 'a\u0000b', '\u007f']),
      ]);
      break;
    case 9:
      for (let i = 0; i < rng.pick([100, 2000]); i++) headers.push([`X-H${i}`, 'v']);
      break;
    case 10:
      early = true;
      break;
    default:
      payload = Buffer.alloc(0);
      break;
  }
  const method = rng.chance(0.7) ? rng.pick(['GET', 'POST']) : rng.pick(METHODS);
  const target = rng.pick(TARGETS);
  const version = rng.chance(0.93)
    ? 'HTTP/1.1'
    : rng.pick(['HTTP/1.0', 'HTTP/2.0', 'HTTP/9.9', 'HTTP/1', '']);
  const head = `${method} ${target} ${version}\r\n${headers.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;
  let bytes = Buffer.concat([Buffer.from(head, 'latin1'), payload]);
  if (rng.chance(0.1))
    bytes = Buffer.concat([bytes.subarray(0, rng.int(bytes.length)), rng.bytes(rng.range(1, 8))]);
  if (early) bytes = bytes.subarray(0, rng.int(bytes.length));
  return {
    category: 'framing',
    request: bytes,
    earlyClose: early,
    pieces: rng.chance(0.3) ? rng.range(2, 6) : 1,
  };
}

// ---------------------------------------------------------------- running a case

interface Generated {
  category: string;
  /** The listener the case talks to: the HTTP port (default) or the Wyoming one. */
  target?: 'wyoming';
  request: Buffer;
  /** The client closes after writing (it never waits for an answer). */
  earlyClose?: boolean;
  /** Bytes written 50 ms after the request (a WebSocket's close frame, once its events had time to be answered). */
  trailer?: Buffer;
  /** Write the bytes in this many pieces (parsers must not care where writes split). */
  pieces?: number;
  /** What the answer shows that it must not, beyond its status (media cases). */
  check?: (outcome: Outcome) => string | undefined;
  /** A session case: real clients that follow their plan in time, instead of `request`'s bytes. */
  session?: (target: SessionTarget, deadlineMs: number) => Promise<SessionOutcome>;
}

export function generate(seed: number, index: number): Generated {
  const rng = new Rng(caseSeed(seed, index));
  const kind = rng.int(100);
  if (kind < 23) return framingCase(rng);
  if (kind < 46) return jsonCase(rng);
  if (kind < 60) return multipartCase(rng);
  if (kind < 71) return wavCase(rng);
  if (kind < 83) return mediaCase(rng);
  if (kind < 88) return liveCase(rng);
  if (kind < 92) {
    const wy = wyomingCase(rng, (obj) => mutateObject(rng, obj));
    return {
      category: 'wyoming',
      target: 'wyoming',
      request: wy.request,
      check: (outcome) => wy.check(outcome.body),
    };
  }
  // 5% session cases, 3% WebSocket framing and events.
  if (kind < 97) {
    const sc = sessionCase(rng, `case ${index} (replay: npm run fuzz -- --seed ${seed} --case ${index})`);
    return {
      category: sc.category,
      request: Buffer.from(JSON.stringify(sc.plans)),
      session: sc.run,
      check: (outcome) => outcome.detail,
    };
  }
  const ws = websocketCase(
    rng,
    (obj) => mutateObject(rng, obj),
    (text) => mutateJsonText(rng, text),
  );
  return {
    category: {
      bridge: 'websocket bridge',
      deepgram: 'websocket deepgram',
      realtime: 'websocket /v1/realtime',
    }[ws.target],
    request: ws.request,
    earlyClose: ws.earlyClose,
    ...(ws.trailer ? { trailer: ws.trailer } : {}),
    check: (outcome) => ws.check(outcome.body),
  };
}

export interface Outcome {
  /** The status line's code, or 'closed' (no response), 'client-closed' (an early-close case). */
  status: number | 'closed' | 'client-closed' | 'hang';
  /** An SSE error event's type and message, or the body of a 5xx. */
  detail?: string;
  /** The type of a streamed response's SSE error event. */
  sseError?: string;
  /** The start of the body, for the case's own check. */
  body?: string;
}

const CASE_DEADLINE_MS = 8000;

/** Writes one case on a fresh connection and waits for its end: a whole response, or a close. */
/**
 * A Wyoming case: the events are written, what the listener answers within WYOMING_QUIET_MS is
 * kept, then the client leaves (a Wyoming connection stays open between exchanges).
 */
const WYOMING_QUIET_MS = 300;
function runWyomingCase(port: number, gen: Generated): Promise<Outcome> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const received: Buffer[] = [];
    let done = false;
    const finish = (status: Outcome['status']) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ status, body: Buffer.concat(received).toString('utf8').slice(0, 65536) });
    };
    const timer = setTimeout(() => finish('hang'), CASE_DEADLINE_MS);
    socket.on('error', () => {});
    socket.on('data', (d: Buffer) => received.push(d));
    socket.on('close', () => finish('closed'));
    socket.on('connect', () => {
      socket.write(gen.request);
      setTimeout(() => finish('client-closed'), WYOMING_QUIET_MS);
    });
  });
}

export function runCase(
  url: string,
  gen: Generated,
  wyomingPort?: number,
  sessionTarget?: SessionTarget,
): Promise<Outcome> {
  if (gen.session) {
    const run = gen.session;
    // A caller that replays single cases (test/http/fuzz-regressions.test.ts) gives no target:
    // the speech is made on first use, without the warm-up (a cold model is a case like another).
    const target = sessionTarget ? Promise.resolve(sessionTarget) : speechFor(url);
    return target
      .then((t) => run(t, CASE_DEADLINE_MS))
      .then((o) => ({
        status: o.status,
        detail: o.problems.length > 0 ? o.problems.slice(0, 3).join('; ') : undefined,
      }));
  }
  if (gen.target === 'wyoming') return runWyomingCase(wyomingPort!, gen);
  const { port, hostname } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    const received: Buffer[] = [];
    let done = false;
    const finish = (outcome: Outcome) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(() => finish({ status: 'hang' }), CASE_DEADLINE_MS);
    socket.on('error', () => {});
    socket.on('data', (d: Buffer) => {
      received.push(d);
      const res = parseResponse(Buffer.concat(received));
      if (res?.complete && res.headers['content-length'] !== undefined) finish(settled(res));
      else if (res?.complete && res.headers['transfer-encoding']) finish(settled(res));
    });
    socket.on('close', () => {
      const raw = Buffer.concat(received);
      const res = parseResponse(raw);
      finish(res ? settled(res, raw) : { status: 'closed' });
    });
    socket.on('connect', async () => {
      const pieces = gen.pieces ?? 1;
      const step = Math.ceil(gen.request.length / pieces) || 1;
      for (let at = 0; at < gen.request.length; at += step) {
        if (done) return;
        socket.write(gen.request.subarray(at, at + step));
        if (pieces > 1) await new Promise((r) => setTimeout(r, 1));
      }
      if (gen.trailer && !done) {
        await new Promise((r) => setTimeout(r, 50));
        if (!done) socket.write(gen.trailer);
      }
      if (gen.earlyClose) {
        await new Promise((r) => setTimeout(r, 2));
        finish({ status: 'client-closed' });
      } else if (!gen.request.includes('\r\n\r\n')) {
        // A head that never ends waits for node's headers timeout (60 s, docs/api.md Transport),
        // which is the documented answer; the case only checks nothing breaks before it gives up.
        await new Promise((r) => setTimeout(r, 300));
        finish({ status: 'client-closed' });
      }
    });
  });
}

function settled(res: ReturnType<typeof parseResponse> & object, raw?: Buffer): Outcome {
  // A 101 has no HTTP body: what follows its head is the WebSocket's frames, events in clear text.
  if (res.status === 101 && raw) {
    const frames = raw.subarray(raw.indexOf('\r\n\r\n') + 4, raw.indexOf('\r\n\r\n') + 4 + 65536);
    // As latin1, one char a byte: the case's check reads the close frame's code (websocket.ts closeOf).
    return { status: 101, body: frames.toString('latin1') };
  }
  const text = res.body.toString('utf8');
  // A streamed answer's status is 200 from the start; a server fault shows as an SSE error event.
  const match = /"type":"error","error":\{"message":"([^"]*)","type":"(\w+)"/.exec(text);
  const body = text.slice(0, 4000);
  if (match) return { status: res.status, detail: `${match[2]}: ${match[1]}`, sseError: match[2], body };
  return { status: res.status, detail: res.status >= 500 ? text.slice(0, 300) : undefined, body };
}

/** A status that proves the server kept its footing: 2xx, 4xx, 503, or a closed connection. */
export function acceptable(outcome: Outcome): boolean {
  if (outcome.status === 'hang') return false;
  if (typeof outcome.status !== 'number') return true;
  if (outcome.sseError === 'server_error') return false;
  const s = outcome.status;
  // 101: a realtime session began; its events are the case's own check (websocket.ts).
  return s === 101 || (s >= 200 && s < 300) || (s >= 400 && s < 500) || s === 503;
}

// ---------------------------------------------------------------- leak checks

/**
 * The models with a slot taken or a request queued, as `id:active/queued`, and those loading or
 * unloading, as `id:state` (aliases left out).
 */
async function busyModels(url: string): Promise<string> {
  try {
    const models = (await (await fetch(`${url}/v1/models`)).json()) as {
      data: {
        id: string;
        active_slots?: number;
        queued_requests?: number;
        alias_of?: string;
        state?: string;
      }[];
    };
    const shown: string[] = [];
    for (const m of models.data) {
      if (m.alias_of !== undefined) continue;
      if ((m.active_slots ?? 0) > 0 || (m.queued_requests ?? 0) > 0)
        shown.push(`${m.id}:${m.active_slots ?? 0}/${m.queued_requests ?? 0}`);
      if (m.state !== undefined && m.state !== 'ready' && m.state !== 'unloaded')
        shown.push(`${m.id}:${m.state}`);
    }
    return shown.join(' ') || 'none';
  } catch (err) {
    return `unknown (${(err as Error).message})`;
  }
}

function openFds(): number {
  return readdirSync('/proc/self/fd').length;
}

/** This process's live children (runner processes), from /proc. */
function childProcesses(): number {
  let n = 0;
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'latin1');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === process.pid && fields[0] !== 'Z') n++;
    } catch {
      // gone between the listing and the read
    }
  }
  return n;
}

interface Baseline {
  fds: number;
  children: number;
}

/**
 * Whether the server holds nothing the cases left. First with the session clients that went on in
 * the background still connected: every slot must be free while they live (a pinging or
 * non-reading client holds no model), and those the server must close must be closed. Then, once
 * the fuzzer has ended them, fds and runner processes back near the baseline (this process holds
 * the clients' sockets too, so they are counted only once those are gone).
 */
async function settledServer(url: string, baseline: Baseline): Promise<string[]> {
  const live = leftoverCount();
  // Said apart, since they tell different bugs: a slot held while a silent or pinging client is
  // still connected (a timeout that does not end its turn), and one still held once every client
  // has gone (a turn that its client's leaving does not end).
  const connected = (await quiet(url, baseline, true)).map((p) =>
    live > 0 ? `with ${live} session client(s) still connected: ${p}` : p,
  );
  const problems = [...connected, ...lateProblems()];
  endLeftovers();
  const after = await quiet(url, baseline, false);
  for (const p of after) problems.push(live > 0 ? `with every client gone: ${p}` : p);
  return problems;
}

async function quiet(url: string, baseline: Baseline, sessionsLive: boolean): Promise<string[]> {
  const problems: string[] = [];
  const deadline = Date.now() + 10000;
  for (;;) {
    problems.length = 0;
    if (sessionsLive) problems.push(...leftoverProblems());
    try {
      const health = await fetch(`${url}/health`);
      if (health.status !== 200) problems.push(`GET /health answered ${health.status}`);
      const models = (await (await fetch(`${url}/v1/models`)).json()) as {
        data: { id: string; active_slots?: number; queued_requests?: number; alias_of?: string }[];
      };
      // An alias shows its model's slots: the model says it once.
      for (const m of models.data)
        if (m.alias_of === undefined && ((m.active_slots ?? 0) !== 0 || (m.queued_requests ?? 0) !== 0))
          problems.push(`${m.id}: active_slots ${m.active_slots}, queued_requests ${m.queued_requests}`);
    } catch (err) {
      problems.push(`health check failed: ${(err as Error).message}`);
    }
    if (!sessionsLive) {
      const fds = openFds();
      if (fds > baseline.fds + 16) problems.push(`open fds ${fds}, baseline ${baseline.fds}`);
      const children = childProcesses();
      if (children > baseline.children + 2)
        problems.push(`child processes ${children}, baseline ${baseline.children}`);
    }
    if (problems.length === 0 || Date.now() > deadline) return problems;
    await new Promise((r) => setTimeout(r, 50));
  }
}

// ---------------------------------------------------------------- main

interface Args {
  cases: number;
  seed: number;
  case?: number;
  concurrency: number;
  checkEvery: number;
}

function parseArgs(argv: string[]): Args {
  const args: Args = { cases: 1000, seed: Date.now() % 2 ** 31, concurrency: 16, checkEvery: 1000 };
  for (let i = 0; i < argv.length; i++) {
    const value = Number(argv[i + 1]);
    switch (argv[i]) {
      case '--cases':
        args.cases = value;
        break;
      case '--seed':
        args.seed = value;
        break;
      case '--case':
        args.case = value;
        break;
      case '--concurrency':
        args.concurrency = value;
        break;
      case '--check-every':
        args.checkEvery = value;
        break;
      default:
        throw new Error(
          `unknown argument ${argv[i]}; use --cases N --seed S --case K --concurrency C --check-every N`,
        );
    }
    if (!Number.isInteger(value) || value < 0) throw new Error(`${argv[i]} needs a non-negative integer`);
    i++;
  }
  return args;
}

/**
 * How long the server under test may take to close once the cases are done: a clean close takes
 * well under a second, and one that has to cancel work ends at the target's shutdown_timeout_ms
 * (5 s) and its grace; past this it did not keep to its own deadline, a finding.
 */
const CLOSE_DEADLINE_MS = 15_000;

/** An error or rejection reason, as a finding shows it. */
function described(reason: unknown): string {
  if (reason instanceof Error) return (reason.stack ?? `${reason.name}: ${reason.message}`).slice(0, 800);
  return String(reason).slice(0, 800);
}

/** Closes the server within CLOSE_DEADLINE_MS; what went wrong, if anything. */
async function closeWithin(server: TestServer): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string>((resolve) => {
    timer = setTimeout(
      () => resolve(`the server did not close within ${CLOSE_DEADLINE_MS} ms`),
      CLOSE_DEADLINE_MS,
    );
  });
  const closing = server.close().then(
    () => undefined,
    (err: unknown) => `the server's close failed: ${described(err)}`,
  );
  try {
    return await Promise.race([closing, late]);
  } finally {
    clearTimeout(timer);
  }
}

export async function main(argv: string[]): Promise<number> {
  const args = parseArgs(argv);
  const findings: string[] = [];
  // A rejection nobody handled or an exception nobody caught, the server's or the fuzzer's own, is
  // a finding of the run: counted before the summary instead of turning the exit code after it
  // (node's default for both is exit 1, whatever the summary said).
  const onRejection = (reason: unknown) => findings.push(`unhandled rejection: ${described(reason)}`);
  const onException = (err: unknown) => findings.push(`uncaught exception: ${described(err)}`);
  process.on('unhandledRejection', onRejection);
  process.on('uncaughtException', onException);
  try {
    return await fuzz(args, findings);
  } finally {
    process.off('unhandledRejection', onRejection);
    process.off('uncaughtException', onException);
  }
}

const SPEECH_TEXT = 'Please call me tomorrow morning. The weather is nice today.';

const speeches = new Map<string, Promise<SessionTarget>>();

/** The session target of a server startTarget started, its speech made once. */
function speechFor(url: string): Promise<SessionTarget> {
  const wyomingPort = wyomingPorts.get(url);
  if (wyomingPort === undefined) return Promise.reject(new Error(`${url} is no server startTarget started`));
  let target = speeches.get(url);
  if (!target) {
    target = fliteSpeech(url, SPEECH_TEXT, 16000, SESSION_MODELS.tts).then((speech) => ({
      url,
      wyomingPort,
      speech,
    }));
    speeches.set(url, target);
  }
  return target;
}

/**
 * What the session cases need: speech, made once by flite through the server's own route, and the
 * real models (pocketsphinx, flite, silero) loaded, so that their runner processes are part of the
 * baseline rather than counted as left behind by the first case that loads them.
 */
async function prepareSessions(server: TestServer): Promise<SessionTarget> {
  const target = await speechFor(server.url);
  const { speech } = target;
  const wav = Buffer.concat([wavHeader(16000, 1, speech.length), speech]).toString('base64');
  for (const model of [SESSION_MODELS.live, 'silero-vad']) {
    const res = await request(server.url, 'POST', '/v1/tasks/run', {
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ model, audio_base64: wav }),
    });
    if (res.status !== 200)
      throw new Error(
        `the session cases need ${model}: ${res.status} ${res.body.toString('utf8').slice(0, 300)}`,
      );
  }
  return target;
}

async function fuzz(args: Args, findings: string[]): Promise<number> {
  const server = await startTarget();
  const started = Date.now();
  const byCategory = new Map<string, number>();
  /** Milliseconds the cases of each category took, summed: what each costs a run at a given concurrency. */
  const caseTime = new Map<string, number>();
  const statuses = new Map<string, number>();
  const replay = (k: number) => `npm run fuzz -- --seed ${args.seed} --case ${k}`;
  const indexes = args.case !== undefined ? [args.case] : Array.from({ length: args.cases }, (_, i) => i);
  try {
    const sessions = await prepareSessions(server);
    // Taken after startup and the session models' warm-up: the fixture starts runner processes
    // only for its fault options, which no case carries, so any child beyond these is one a
    // request left behind.
    const baseline = { fds: openFds(), children: childProcesses() };
    let next = 0;
    let batchEnd = 0;
    /** The batch's session cases, named when its check finds something (a slot is no case's own). */
    const sessionCases: number[] = [];
    const worker = async () => {
      while (next < batchEnd) {
        const k = indexes[next++]!;
        const gen = generate(args.seed, k);
        if (gen.session) sessionCases.push(k);
        const t0 = performance.now();
        const outcome = await runCase(server.url, gen, server.voxd.wyoming?.port, sessions);
        byCategory.set(gen.category, (byCategory.get(gen.category) ?? 0) + 1);
        caseTime.set(gen.category, (caseTime.get(gen.category) ?? 0) + performance.now() - t0);
        const key = `${outcome.status}${outcome.sseError ? ` (sse ${outcome.sseError})` : ''}`;
        statuses.set(key, (statuses.get(key) ?? 0) + 1);
        const problem = gen.check?.(outcome);
        if (!acceptable(outcome) || problem) {
          // What held a case that hung is most often another's: the models still busy say whose.
          const busy =
            outcome.status === 'hang' ? ` (busy at its deadline: ${await busyModels(server.url)})` : '';
          findings.push(
            `case ${k} [${gen.category}]: ${outcome.status} ${problem ?? outcome.detail ?? ''}${busy}\n  replay: ${replay(k)}`,
          );
          if (args.case !== undefined)
            process.stdout.write(
              `request: ${JSON.stringify(gen.request.subarray(0, 2000).toString('latin1'))}\n`,
            );
        }
      }
    };
    // Cases run in batches of --check-every; between batches nothing is in flight, so whatever the
    // server still holds (slots, queued requests, fds, runners) was left behind by a request.
    const every = Math.max(1, args.checkEvery);
    for (let from = 0; from < indexes.length; from += every) {
      batchEnd = Math.min(indexes.length, from + every);
      await Promise.all(Array.from({ length: Math.max(1, args.concurrency) }, worker));
      const where = batchEnd === indexes.length ? 'at the end' : `after case ${batchEnd - 1}`;
      const problems = await settledServer(server.url, baseline);
      for (const p of problems) findings.push(`${where}: ${p}`);
      if (problems.length > 0 && sessionCases.length > 0)
        findings.push(
          `${where}: the batch's session cases, each replayed alone by --case: ${sessionCases.sort((a, b) => a - b).join(' ')}`,
        );
      sessionCases.length = 0;
      // Progress on stderr, so a long run that is stopped still says how far it got and how fast.
      const elapsed = ((Date.now() - started) / 1000).toFixed(1);
      process.stderr.write(
        `fuzz: ${batchEnd}/${indexes.length} cases, ${elapsed} s, ${findings.length} findings\n`,
      );
    }
  } catch (err) {
    findings.push(`the fuzzer itself failed: ${described(err)}`);
  }
  endLeftovers();
  // Closed before the summary: a close that fails or hangs is a finding the summary counts, not
  // an exit code it contradicts. What was busy as it began says what it may have waited for.
  const busy = await busyModels(server.url);
  const closeProblem = await closeWithin(server);
  if (closeProblem) findings.push(`${closeProblem} (busy as it began: ${busy})`);
  // Read after the close, so that what the server logged while it shut down is judged too.
  for (const r of server.records.filter((r) => r.level === 'error' || r.level === 'fatal').slice(0, 5))
    findings.push(`logged ${r.level}: ${r.msg} ${r.err?.stack?.slice(0, 800) ?? ''}`);
  const faults = server.logs.filter((line) => /unhandled|uncaught/i.test(line));
  for (const f of faults.slice(0, 5)) findings.push(`logged: ${f.slice(0, 500)}`);
  // The summary and the exit code come from this one copy: nothing pushed later can split them.
  // The run's own findings (the batch checks', the close's, the logs') first: when a leak makes
  // many cases hang behind it, the leak is what the printed part must show.
  const reported = [
    ...findings.filter((f) => !f.startsWith('case ')),
    ...findings.filter((f) => f.startsWith('case ')),
  ];
  const seconds = (Date.now() - started) / 1000;
  const out = process.stdout;
  out.write(`fuzz: seed ${args.seed}, ${indexes.length} cases in ${seconds.toFixed(1)} s\n`);
  out.write('cases per category:\n');
  for (const [c, n] of [...byCategory].sort())
    out.write(`  ${c}: ${n} (${((caseTime.get(c) ?? 0) / 1000).toFixed(1)} s of case time)\n`);
  out.write('outcomes:\n');
  for (const [s, n] of [...statuses].sort()) out.write(`  ${s}: ${n}\n`);
  out.write(`findings: ${reported.length}\n`);
  for (const f of reported.slice(0, 50)) out.write(`  ${f}\n`);
  return reported.length === 0 ? 0 : 1;
}
