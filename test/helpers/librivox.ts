/**
 * Real recordings for the recognition tests: the five LibriVox clips of Debian's
 * pocketsphinx-testdata (one reader, "Sense and Sensibility", 16 kHz mono 16-bit WAV), their
 * reference text, and what tests make of them (clips joined with pauses, compressed copies), plus
 * the three ways voxd transcribes over HTTP (offline, streamed, live) reduced to their final text.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeWav } from '../../src/audio/wav-encode.js';
import { type SseEvent, sseEvents } from './sse.js';
import { type HttpResult, request } from './voxd.js';

const DIR = '/usr/share/pocketsphinx/test/data/librivox';
export const LIBRIVOX_RATE = 16000;

/** The clips by their number (0870, 0880, 0890, 0920, 0930: 7.1, 3.0, 5.3, 6.05, 3.3 s). */
export type ClipId = '0870' | '0880' | '0890' | '0920' | '0930';

export function librivoxWav(id: ClipId): Buffer {
  return readFileSync(join(DIR, `sense_and_sensibility_01_austen_64kb-${id}.wav`));
}

/** A clip's samples (the 44-byte header of these files skipped). */
export function librivoxSamples(id: ClipId): Float32Array {
  const wav = librivoxWav(id);
  const out = new Float32Array((wav.length - 44) / 2);
  for (let i = 0; i < out.length; i++) out[i] = wav.readInt16LE(44 + 2 * i) / 32768;
  return out;
}

/** The clips one after another with `pauseSeconds` of silence between them, as a WAV. */
export function joinedWav(ids: ClipId[], pauseSeconds: number): { wav: Buffer; starts: number[] } {
  const parts = ids.map(librivoxSamples);
  const pause = Math.round(pauseSeconds * LIBRIVOX_RATE);
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0) + pause * (parts.length - 1));
  const starts: number[] = [];
  let at = 0;
  for (const part of parts) {
    starts.push(at);
    out.set(part, at);
    at += part.length + pause;
  }
  return { wav: encodeWav({ samples: out, sampleRate: LIBRIVOX_RATE, channels: 1 }), starts };
}

/** `wav` compressed by the ffmpeg command line: `mp3` (LAME) or `ogg` (Vorbis). */
export function compressed(wav: Buffer, format: 'mp3' | 'ogg'): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'voxd-librivox-'));
  try {
    writeFileSync(join(dir, 'in.wav'), wav);
    const codec = format === 'mp3' ? 'libmp3lame' : 'libvorbis';
    execFileSync('ffmpeg', [
      '-v',
      'error',
      '-i',
      join(dir, 'in.wav'),
      '-c:a',
      codec,
      join(dir, `out.${format}`),
    ]);
    return readFileSync(join(dir, `out.${format}`));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function upload(
  base: string,
  model: string,
  bytes: Buffer,
  filename: string,
  fields: Record<string, string>,
) {
  const form = new FormData();
  form.set('model', model);
  form.set('file', new Blob([bytes]), filename);
  for (const [key, value] of Object.entries(fields)) form.append(key.replace(/#\d+$/, ''), value);
  return request(base, 'POST', '/v1/audio/transcriptions', { body: form });
}

/** An upload's answer (`fields`: more form fields; `key#2` repeats `key`). */
export async function transcribeFile(
  base: string,
  model: string,
  bytes: Buffer,
  filename: string,
  fields: Record<string, string> = {},
): Promise<HttpResult> {
  const res = await upload(base, model, bytes, filename, fields);
  assert.equal(res.status, 200, `${filename}: ${res.body.toString()}`);
  return res;
}

/** The final text of a transcription, and the deltas' concatenation when there are deltas. */
export interface Heard {
  text: string;
  deltas?: string;
}

function doneOf(events: SseEvent[], what: string): Heard {
  assert.equal(events.at(-1), '[DONE]', `${what}: ${JSON.stringify(events)}`);
  const parsed = events.slice(0, -1) as { type: string; delta?: string; text?: string }[];
  const done = parsed.at(-1)!;
  assert.equal(done.type, 'transcript.text.done', what);
  const deltas = parsed.filter((e) => e.type === 'transcript.text.delta').map((e) => e.delta!);
  return { text: done.text!, deltas: deltas.join('') };
}

/** An upload transcribed offline: its text. */
export async function heardOffline(
  base: string,
  model: string,
  bytes: Buffer,
  filename: string,
): Promise<Heard> {
  return { text: (await transcribeFile(base, model, bytes, filename)).json.text as string };
}

/** An upload transcribed with `stream=true` (searched whole, as offline; its words sent as deltas). */
export async function heardStreamed(
  base: string,
  model: string,
  bytes: Buffer,
  filename: string,
): Promise<Heard> {
  const res = await transcribeFile(base, model, bytes, filename, { stream: 'true' });
  return doneOf(sseEvents(res.body), `streamed ${filename}`);
}

/** A 16 kHz mono WAV's samples sent to the live route as raw s16le PCM, 0.1 s per chunk of a chunked body. */
export async function heardLive(base: string, model: string, wav: Buffer): Promise<Heard> {
  const pcm = wav.subarray(44);
  const chunk = 2 * LIBRIVOX_RATE * 0.1; // bytes
  let at = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= pcm.length) {
        controller.close();
        return;
      }
      controller.enqueue(pcm.subarray(at, at + chunk));
      at += chunk;
    },
  });
  const res = await fetch(
    `${base}/v1/audio/transcriptions/live?model=${model}&sample_rate=${LIBRIVOX_RATE}`,
    {
      method: 'POST',
      body,
      duplex: 'half',
    } as RequestInit,
  );
  const bytes = Buffer.from(await res.arrayBuffer());
  assert.equal(res.status, 200, bytes.toString());
  return doneOf(sseEvents(bytes), 'live');
}
