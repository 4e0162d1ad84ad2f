/**
 * The fuzzer's Wyoming category: a connection to the Wyoming listener, then 1-8 events built from
 * valid ones (describe, transcribe, audio-start/chunk/stop in good and bad formats, synthesize,
 * ping, unknown types), their data mutated as the JSON bodies are, and the framing broken: lying
 * lengths (longer than what follows, or shorter, so the rest reads as a header), huge header lines,
 * headers that are not JSON or not objects, negative and non-integer lengths, payloads with no
 * audio-start. The client then leaves. The listener must answer what it can read, never with an
 * internal error, and must survive: the leak checks between batches see no slot, connection or
 * child left behind.
 */
import { frameOf as frame } from '../helpers/wyoming.js';
import type { Rng } from './fuzz.js';

const FORMATS = [
  { rate: 16000, width: 2, channels: 1 },
  { rate: 8000, width: 1, channels: 2 },
  { rate: 22050, width: 3, channels: 1 },
  { rate: 48000, width: 4, channels: 2 },
  { rate: 0, width: 2, channels: 1 },
  { rate: 16000, width: 5, channels: 1 },
  { rate: 16000, width: 2, channels: 0 },
  { rate: '16000', width: 2, channels: 1 },
];

export function wyomingCase(
  rng: Rng,
  mutate: (o: Record<string, unknown>) => Record<string, unknown>,
): { request: Buffer; check: (body: string | undefined) => string | undefined } {
  const format = () => rng.pick(FORMATS) as Record<string, unknown>;
  const events: (() => [string, Record<string, unknown>, Buffer?])[] = [
    () => ['describe', {}],
    () => ['ping', { text: 'x' }],
    () => [
      'transcribe',
      {
        name: rng.pick(['fz-asr', 'fz-asr-live', 'silero-vad', 'fz-vad', 'fz-tts', 'nope', undefined]),
        language: 'en',
      },
    ],
    () => ['audio-start', format()],
    () => {
      const f = format();
      return ['audio-chunk', f, rng.bytes(rng.pick([0, 1, 3, 320, 3200]))];
    },
    () => ['audio-stop', {}],
    () => [
      'synthesize',
      {
        text: rng.pick(['Hello.', '', 'x'.repeat(3000)]),
        voice: { name: rng.pick(['fz-tts', 'fz-tts-live', 'fz-asr', 'nope', 'fz-tts:alloy']) },
      },
    ],
    () => [rng.pick(['synthesize-start', 'detect', 'run-pipeline', '']), {}],
  ];
  const parts: Buffer[] = [];
  for (let n = rng.range(1, 8); n > 0; n--) {
    const [type, data, payload] = rng.pick(events)();
    const body = rng.chance(0.2) ? mutate(data) : data;
    if (!rng.chance(0.2)) {
      parts.push(frame(type, body, payload));
      continue;
    }
    const dataBytes = Buffer.from(JSON.stringify(body));
    switch (rng.int(7)) {
      case 0: // a data_length longer than what follows: the listener waits, the client leaves
        parts.push(
          Buffer.from(`${JSON.stringify({ type, data_length: dataBytes.length + rng.range(1, 5000) })}\n`),
          dataBytes,
        );
        break;
      case 1: // shorter: the rest of the data reads as the next header
        parts.push(
          Buffer.from(`${JSON.stringify({ type, data_length: Math.max(0, dataBytes.length - 3) })}\n`),
          dataBytes,
        );
        break;
      case 2:
        parts.push(Buffer.alloc(rng.pick([1000, 70 * 1024]), 0x7b));
        break;
      case 3:
        parts.push(
          Buffer.from(
            rng.pick(['{"type": "describe"\n', '[1,2]\n', '"describe"\n', '{}\n', '\n', '{"type": 7}\n']),
          ),
        );
        break;
      case 4:
        parts.push(
          Buffer.from(
            `${JSON.stringify({ type, data_length: rng.pick([-1, 1.5, '3', 2 ** 40]), payload_length: rng.pick([undefined, -5, 2 ** 53]) })}\n`,
          ),
        );
        break;
      case 5:
        parts.push(Buffer.from(`${JSON.stringify({ type, data: rng.pick([[1], 'x', 5, null]) })}\n`));
        break;
      default: // a payload on an event with no data_length, and audio out of order
        parts.push(
          frame('audio-chunk', { rate: 16000, width: 2, channels: 1 }, rng.bytes(rng.pick([1, 2, 4096]))),
        );
    }
  }
  return {
    request: Buffer.concat(parts),
    check: (body) =>
      body && /"code":\s*"internal_error"/.test(body)
        ? `an internal error event: ${body.slice(0, 300)}`
        : undefined,
  };
}
