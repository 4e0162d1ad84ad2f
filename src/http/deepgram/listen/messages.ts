/**
 * The messages a `/v1/listen` socket sends, in Deepgram's shapes (`@deepgram/sdk` 5.x
 * ListenV1Results, ListenV1Metadata, ListenV1SpeechStarted, ListenV1UtteranceEnd), and the
 * metadata every Results carries. Times are seconds on the stream's timeline (from its first
 * audio byte). Nothing here holds state or talks to a socket.
 */
import { randomUUID } from 'node:crypto';
import type { ModelEntry } from '../../../runtime/model-entry.js';
import { modelUuid } from '../model-name.js';

/** One word of a transcript, as Deepgram's words are. */
export interface DeepgramWord {
  word: string;
  start: number;
  end: number;
  confidence: number;
  punctuated_word: string;
}

/** What every message of one session says about it and its model. */
export interface SessionFacts {
  requestId: string;
  created: string;
  modelUuid: string;
  modelInfo: { name: string; version: string; arch: string };
  channels: number;
}

export function sessionFacts(entry: ModelEntry, channels: number): SessionFacts {
  return {
    requestId: randomUUID(),
    created: new Date().toISOString(),
    modelUuid: modelUuid(entry.id),
    modelInfo: { name: entry.id, version: 'voxd', arch: entry.family.name },
    channels,
  };
}

/** Seconds as Deepgram writes them (to the millisecond). */
export const seconds = (ms: number): number => Math.round(ms) / 1000;

export interface ResultsShape {
  startMs: number;
  durationMs: number;
  isFinal: boolean;
  speechFinal: boolean;
  fromFinalize: boolean;
  words: DeepgramWord[];
}

export function resultsMessage(facts: SessionFacts, r: ResultsShape): Record<string, unknown> {
  const { words } = r;
  const confidence =
    words.length === 0
      ? 0
      : Math.round((words.reduce((n, w) => n + w.confidence, 0) / words.length) * 1e4) / 1e4;
  return {
    type: 'Results',
    channel_index: [0, 1],
    duration: seconds(r.durationMs),
    start: seconds(r.startMs),
    is_final: r.isFinal,
    speech_final: r.speechFinal,
    from_finalize: r.fromFinalize,
    channel: {
      alternatives: [{ transcript: words.map((w) => w.word).join(' '), confidence, words }],
    },
    metadata: {
      request_id: facts.requestId,
      model_info: facts.modelInfo,
      model_uuid: facts.modelUuid,
    },
  };
}

export function speechStartedMessage(atMs: number): Record<string, unknown> {
  return { type: 'SpeechStarted', channel: [0], timestamp: seconds(atMs) };
}

export function utteranceEndMessage(lastWordEndMs: number): Record<string, unknown> {
  return { type: 'UtteranceEnd', channel: [0, 1], last_word_end: seconds(lastWordEndMs) };
}

/** The closing summary: the audio heard (its length and SHA-256) and the model. */
export function metadataMessage(
  facts: SessionFacts,
  durationMs: number,
  sha256: string,
): Record<string, unknown> {
  return {
    type: 'Metadata',
    transaction_key: 'deprecated',
    request_id: facts.requestId,
    sha256,
    created: facts.created,
    duration: seconds(durationMs),
    channels: facts.channels,
    models: [facts.modelUuid],
    model_info: { [facts.modelUuid]: facts.modelInfo },
  };
}
