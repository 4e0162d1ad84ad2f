/**
 * The audio a `/v1/speak` request asks for, from its query as Deepgram's clients send it:
 * `encoding` (`linear16`, `mulaw`, `alaw`), `sample_rate` (the values Deepgram allows for that
 * encoding; its default when absent) and `container` (`none`; on the REST form also `wav`, its
 * default there as Deepgram's, while the streaming API takes no container). Options that do not apply to voxd's engines
 * (`bit_rate`, `mip_opt_out`, `tag`, `callback`) are accepted and ignored (docs/deepgram.md). A
 * value voxd cannot honour is a 400 naming the parameter and the value, before anything is held.
 */
import { invalidField, showValue } from '../../../errors.js';

export const SPEAK_ENCODINGS = ['linear16', 'mulaw', 'alaw'] as const;
export type SpeakEncoding = (typeof SPEAK_ENCODINGS)[number];

/** Deepgram's allowed rates per encoding; the first is the default. */
const RATES: Record<SpeakEncoding, readonly number[]> = {
  linear16: [24000, 8000, 16000, 32000, 48000],
  mulaw: [8000, 16000],
  alaw: [8000, 16000],
};

/** Deepgram's speed range (Aura-2); voxd passes it on to the engine. */
export const SPEED_RANGE = { min: 0.7, max: 1.5 } as const;

export interface SpeakFormat {
  encoding: SpeakEncoding;
  sampleRate: number;
  /** A WAV header before the audio (REST only). */
  wav: boolean;
  /** `speed`, when asked. */
  speed: number | undefined;
}

/** The format a query asks for; `rest` allows `container=wav`. */
export function speakFormat(query: URLSearchParams, rest: boolean): SpeakFormat {
  const encoding = query.get('encoding') ?? 'linear16';
  if (!(SPEAK_ENCODINGS as readonly string[]).includes(encoding))
    throw invalidField(
      'encoding',
      `encoding: ${showValue(encoding)} is not an encoding voxd speaks; expected one of: ${SPEAK_ENCODINGS.join(', ')}`,
    );
  const allowed = RATES[encoding as SpeakEncoding];
  const rawRate = query.get('sample_rate');
  const sampleRate = rawRate === null ? allowed[0]! : Number(rawRate);
  if (rawRate !== null && (!/^\d+$/.test(rawRate) || !allowed.includes(sampleRate)))
    throw invalidField(
      'sample_rate',
      `sample_rate: ${showValue(rawRate)} is not a rate of ${encoding}; expected one of: ${[...allowed].sort((a, b) => a - b).join(', ')}`,
    );
  // Deepgram's REST answer is a WAV file unless asked otherwise; its socket sends raw samples.
  const container = query.get('container') ?? (rest ? 'wav' : 'none');
  const containers = rest ? ['none', 'wav'] : ['none'];
  if (!containers.includes(container))
    throw invalidField(
      'container',
      `container: ${showValue(container)} is not a container ${rest ? 'voxd answers' : 'of the streaming API'}; expected ${containers.join(' or ')}`,
    );
  return { encoding: encoding as SpeakEncoding, sampleRate, wav: container === 'wav', speed: speedOf(query) };
}

function speedOf(query: URLSearchParams): number | undefined {
  const raw = query.get('speed');
  if (raw === null) return undefined;
  const speed = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(speed) || speed < SPEED_RANGE.min || speed > SPEED_RANGE.max)
    throw invalidField(
      'speed',
      `speed: ${showValue(raw)} is invalid; expected a number ${SPEED_RANGE.min}..${SPEED_RANGE.max}`,
    );
  return speed;
}

/** The Content-Type of raw audio in `format`, as Deepgram names it. */
export function speakContentType(format: SpeakFormat): string {
  if (format.wav) return 'audio/wav';
  return format.encoding === 'linear16'
    ? `audio/l16;rate=${format.sampleRate};channels=1`
    : format.encoding === 'mulaw'
      ? `audio/PCMU;rate=${format.sampleRate}`
      : `audio/PCMA;rate=${format.sampleRate}`;
}
