/**
 * A session's turn detection, from its `turn_detection` field: null (the client commits), or
 * voxd's server VAD with OpenAI's knobs. `semantic_vad` has no model here that judges whether a
 * sentence is finished, so it is server VAD whose silence window follows its eagerness: OpenAI
 * gives low/medium/high at most 8/4/2 s before it ends a turn; a speaker who has stopped is usually
 * done well before that, so voxd waits 1.2/0.7/0.35 s of silence (auto is medium).
 */
import type { TurnDetectionField } from './client-events.js';
import type { ServerVad } from './server-vad.js';

export type { ServerVad } from './server-vad.js';

/** OpenAI's server_vad defaults. */
const DEFAULTS = { threshold: 0.5, prefixPaddingMs: 300, silenceDurationMs: 500, idleTimeoutMs: 0 };

const EAGERNESS_SILENCE_MS = { low: 1200, medium: 700, high: 350, auto: 700 } as const;

/** The detection a field asks for, OpenAI's defaults for what it leaves out. */
export function turnDetection(field: NonNullable<TurnDetectionField>): ServerVad {
  if (field.type === 'semantic_vad') {
    const eagerness = field.eagerness ?? 'auto';
    return {
      ...DEFAULTS,
      type: 'semantic_vad',
      eagerness,
      silenceDurationMs: EAGERNESS_SILENCE_MS[eagerness],
    };
  }
  return {
    type: 'server_vad',
    threshold: field.threshold ?? DEFAULTS.threshold,
    prefixPaddingMs: field.prefix_padding_ms ?? DEFAULTS.prefixPaddingMs,
    silenceDurationMs: field.silence_duration_ms ?? DEFAULTS.silenceDurationMs,
    idleTimeoutMs: field.idle_timeout_ms ?? DEFAULTS.idleTimeoutMs,
  };
}

/** The detection as the session events show it (OpenAI's field names). */
export function shownTurnDetection(vad: ServerVad | undefined): Record<string, unknown> | null {
  if (!vad) return null;
  if (vad.type === 'semantic_vad') return { type: 'semantic_vad', eagerness: vad.eagerness };
  return {
    type: 'server_vad',
    threshold: vad.threshold,
    prefix_padding_ms: vad.prefixPaddingMs,
    silence_duration_ms: vad.silenceDurationMs,
    idle_timeout_ms: vad.idleTimeoutMs === 0 ? null : vad.idleTimeoutMs,
    create_response: false,
    interrupt_response: false,
  };
}
