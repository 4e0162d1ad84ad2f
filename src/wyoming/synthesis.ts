/**
 * One Wyoming synthesis: `synthesize {text, voice?{name, speaker}}` (or one sentence of a streamed
 * synthesis) -> `audio-start`, `audio-chunk`..., `audio-stop`, each chunk sent as the engine makes
 * it. `voice.name` is `model` or `model:voice`; without it the default speech model (the one `tts-1`
 * names, else the first) speaks. The voice is resolved as POST /v1/audio/speech resolves `voice`
 * (src/api/speech/request.ts): a preset, a voice_dir file, an alias, the engine's own voice, and
 * with none the model's default preset. The engine waits on each send, so a client that reads slowly slows
 * the engine rather than filling voxd's memory; the connection bounds that wait
 * (live_ingest.send_timeout_ms).
 */
import type { Logger } from 'pino';
import { speechModel, speechRequest } from '../api/speech/request.js';
import type { Codec } from '../audio/ffmpeg.js';
import { sliceAudio } from '../audio/pcm16-audio.js';
import { type Audio, heldSamples } from '../audio/types.js';
import { encodePcm16 } from '../audio/wav-encode.js';
import type { ServerConfig } from '../config/types.js';
import { showValue, VoxdError } from '../errors.js';
import type { Runtime } from '../runtime/runtime.js';
import { WyomingError } from './framing.js';
import { defaultSpeechModel } from './tts-voices.js';

export interface SynthesisContext {
  runtime: Runtime;
  config: ServerConfig;
  log: Logger;
  /** ffmpeg, for voice_dir voices in formats voxd does not read itself. */
  codec?: Codec;
  /** Aborted when the connection ends: the request is cancelled and its slot freed. */
  signal: AbortSignal;
  send(type: string, data?: Record<string, unknown>, payload?: Buffer): Promise<void>;
  /** Told the model once it is known, for the exchange's metric. */
  chose(model: string): void;
}

export async function synthesize(ctx: SynthesisContext, data: Record<string, unknown>): Promise<void> {
  const text = data['text'];
  if (typeof text !== 'string' || text.trim() === '')
    throw new WyomingError('invalid_event', `synthesize: text ${showValue(text)} is not text to speak`);
  const voice = (data['voice'] ?? {}) as Record<string, unknown>;
  const named = typeof voice['name'] === 'string' && voice['name'] !== '' ? voice['name'] : undefined;
  const { runtime, config } = ctx;
  const [modelName, voiceName] = named === undefined ? [undefined, undefined] : splitVoice(named);
  const id = modelName ?? defaultSpeechModel(runtime);
  if (id === undefined)
    throw new VoxdError('E_MODEL_NOT_FOUND', 'synthesize: this server has no speech model');
  const entry = await speechModel(runtime, id, 'Wyoming synthesize');
  ctx.chose(entry.id);
  const speaker =
    typeof voice['speaker'] === 'string' && voice['speaker'] !== '' ? voice['speaker'] : undefined;
  const wanted = voiceName ?? speaker;
  // The voice as HTTP resolves it: a preset, a voice_dir file, an alias, or the engine's own voice.
  const request = await speechRequest(
    entry,
    { text, textField: 'text', fields: wanted === undefined ? {} : { voice: wanted } },
    { config, signal: ctx.signal, codec: ctx.codec },
  );
  const started = performance.now();
  let shape: { rate: number; channels: number } | undefined;
  const chunk = async (audio: Audio) => {
    if (!shape) {
      shape = { rate: audio.sampleRate, channels: audio.channels };
      await ctx.send('audio-start', { rate: shape.rate, width: 2, channels: shape.channels });
    }
    await ctx.send(
      'audio-chunk',
      { rate: shape.rate, width: 2, channels: shape.channels },
      encodePcm16(audio),
    );
  };
  const outcome = await runtime.infer(entry.id, request, {
    signal: ctx.signal,
    eventsOnly: true,
    onEvent: (event) => (event.type === 'audio' ? chunk(event.audio) : undefined),
  });
  // An engine that answers whole: its audio in one-second chunks, PCM16 kept as it is.
  const whole = outcome.result.audio;
  if (!shape && whole) {
    const step = whole.sampleRate * whole.channels;
    const length = heldSamples(whole).length;
    for (let at = 0; at < length; at += step) await chunk(sliceAudio(whole, at, at + step));
  }
  if (!shape) throw new VoxdError('E_ENGINE', `model '${entry.id}' produced no audio output`);
  await ctx.send('audio-stop');
  ctx.log.info(
    { protocol: 'wyoming', model: entry.id, chars: text.length, ms: performance.now() - started },
    `wyoming speech from ${entry.id}`,
  );
}

/** `model` or `model:voice`. */
function splitVoice(name: string): [string, string | undefined] {
  const at = name.indexOf(':');
  return at < 0 ? [name, undefined] : [name.slice(0, at), name.slice(at + 1) || undefined];
}
