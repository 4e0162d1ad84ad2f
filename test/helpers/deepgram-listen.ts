/**
 * What the `/v1/listen` tests and scripts/bench-listen.mjs share: spoken clips with silence around
 * them as 16 kHz PCM16 (where their speech ends is known), and audio sent in frames at real time
 * (each frame when its audio would have been spoken) as a microphone sends it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { type ClipId, LIBRIVOX_RATE, librivoxSamples } from './librivox.js';
import { speechBounds } from './samples.js';

export const RATE = LIBRIVOX_RATE;

/** Reference texts of the LibriVox clips (Debian's pocketsphinx-testdata transcription). */
export const REFERENCE: Record<ClipId, string> = {
  '0870':
    'and mister john dashwood had then leisure to consider how much there might be prudently in his power to do for them',
  '0880': 'he was not an ill disposed young man',
  '0890': 'unless to be rather cold hearted and rather selfish is to be ill disposed',
  '0920': 'had he married a more a amiable woman he might have been made still more respectable than he was',
  '0930': 'he might even have been made amiable himself',
};

export interface SpokenClip {
  /** PCM16 little-endian mono at RATE. */
  pcm: Buffer;
  /** Where the last voiced sample of each clip is, in ms from the start. */
  speechEndsMs: number[];
  reference: string;
}

const toPcm16 = (samples: Float32Array): Buffer => {
  const out = Buffer.alloc(samples.length * 2);
  for (let i = 0; i < samples.length; i++)
    out.writeInt16LE(Math.max(-32768, Math.min(32767, Math.round(samples[i]! * 32768))), i * 2);
  return out;
};

/** The clips with `leadMs` of silence before the first, `pauseMs` between them and `tailMs` after. */
export function spoken(ids: ClipId[], { leadMs = 500, pauseMs = 1500, tailMs = 1500 } = {}): SpokenClip {
  const ms = (n: number) => Math.round((n * RATE) / 1000);
  const parts: Float32Array[] = [new Float32Array(ms(leadMs))];
  const speechEndsMs: number[] = [];
  let at = ms(leadMs);
  for (const [i, id] of ids.entries()) {
    const samples = librivoxSamples(id);
    speechEndsMs.push(((at + speechBounds(samples)[1]) * 1000) / RATE);
    parts.push(samples);
    at += samples.length;
    const gap = new Float32Array(ms(i === ids.length - 1 ? tailMs : pauseMs));
    parts.push(gap);
    at += gap.length;
  }
  const all = new Float32Array(at);
  let pos = 0;
  for (const p of parts) {
    all.set(p, pos);
    pos += p.length;
  }
  return { pcm: toPcm16(all), speechEndsMs, reference: ids.map((id) => REFERENCE[id]).join(' ') };
}

/** How `paced` sends: frames of `frameMs` (or exactly `frameBytes`, odd or not), at `speed` times real time. */
export interface Pacing {
  frameMs?: number;
  frameBytes?: number;
  speed?: number;
  signal?: AbortSignal;
  /** Told each frame's end (ms of audio) as it is sent. */
  sent?: (ms: number) => void;
}

/**
 * Sends `pcm` through `send` in frames, each when its audio would have been spoken (`speed` 1: real
 * time). Stops when `signal` aborts.
 */
export async function paced(pcm: Buffer, send: (frame: Buffer) => void, pacing: Pacing = {}): Promise<void> {
  const { frameMs = 40, speed = 1, signal, sent } = pacing;
  const frameBytes = pacing.frameBytes ?? Math.round((frameMs * RATE) / 1000) * 2;
  const started = performance.now();
  for (let at = 0; at < pcm.length; at += frameBytes) {
    if (signal?.aborted) return;
    const end = Math.min(pcm.length, at + frameBytes);
    send(pcm.subarray(at, end));
    const endMs = (end / 2 / RATE) * 1000;
    sent?.(endMs);
    const due = started + endMs / speed - performance.now();
    if (due > 0) await sleep(due);
  }
}
