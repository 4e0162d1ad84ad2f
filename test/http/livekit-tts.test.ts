/**
 * LiveKit Agents' OpenAI TTS (@livekit/agents-plugin-openai 1.9.0, unmodified) against a real voxd
 * (issue 39, item 1). The plugin asks for `pcm` and labels every frame 24 kHz, OpenAI's rate, which
 * it hard-codes; voxd once sent flite's 16 kHz there, so agents spoke 1.5x fast. Here the frames'
 * labelled duration must be the audio's real one (the same request fetched as a WAV), and the frames,
 * played back at their label, must be heard by voxd's STT as well as that WAV is. Both the plugin's
 * own `synthesize` and the path AgentSession takes (`tts.StreamAdapter` with a sentence tokenizer,
 * one request per sentence) are driven. Engines: flite speaks (`tts-1`), pocketsphinx listens.
 */

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { initializeLogger, tokenize, tts as ttslib } from '@livekit/agents';
import * as openai from '@livekit/agents-plugin-openai';
import type { AudioFrame } from '@livekit/rtc-node';
import { floats } from '../../src/audio/pcm16-audio.js';
import { decodeWav } from '../../src/audio/wav-decode.js';
import { encodeWav } from '../../src/audio/wav-encode.js';
import { suiteServer } from '../helpers/suite-server.js';
import { post, transcribe } from '../helpers/voxd.js';
import { wordErrorRate } from '../helpers/wer.js';

const SENTENCES = ['Please call me tomorrow morning.', 'The weather is nice today.'];
const TEXT = SENTENCES.join(' ');
/** The plugin's frames: AudioByteStream's default of 100 ms at its 24 kHz. */
const FRAME_SECONDS = 0.1;

initializeLogger({ pretty: false, level: 'warn' });

describe('LiveKit Agents OpenAI TTS (plugin 1.9.0) against voxd', () => {
  const s = suiteServer({
    models: [
      { id: 'flite', family: 'flite_tts', task: 'tts', mode: 'streaming', lazy: true },
      { id: 'pocketsphinx', family: 'pocketsphinx_asr', task: 'asr', mode: 'streaming', lazy: true },
    ],
  });
  const plugin = () =>
    new openai.TTS({ baseURL: `${s.url}/v1`, apiKey: 'sk-none', model: 'tts-1', voice: 'alloy' });

  /** The same request as a WAV, which carries its own rate: the audio's real length and samples. */
  async function wavOf(input: string): Promise<Buffer> {
    const res = await post(s.url, '/v1/audio/speech', {
      model: 'tts-1',
      voice: 'alloy',
      input,
      response_format: 'wav',
    });
    assert.equal(res.status, 200, res.body.toString());
    return res.body;
  }
  const secondsOf = (wav: Buffer) => {
    const audio = decodeWav(wav);
    return floats(audio).length / audio.channels / audio.sampleRate;
  };

  /** The frames as a player takes them: their samples at the rate they are labelled with. */
  function framesAsWav(frames: AudioFrame[]): { wav: Buffer; seconds: number } {
    const rates = new Set(frames.map((f) => f.sampleRate));
    assert.deepEqual([...rates], [24000], 'every frame says 24 kHz');
    assert.ok(frames.every((f) => f.channels === 1));
    const samples = new Float32Array(frames.reduce((n, f) => n + f.samplesPerChannel, 0));
    let at = 0;
    for (const f of frames) for (const v of f.data) samples[at++] = v / 32768;
    return { wav: encodeWav({ samples, sampleRate: 24000, channels: 1 }), seconds: samples.length / 24000 };
  }

  async function heard(wav: Buffer): Promise<string> {
    const res = await transcribe(s.url, 'whisper-1', wav);
    assert.equal(res.status, 200, res.body.toString());
    return res.json.text as string;
  }

  test('synthesize(): the frames last as long as the audio, and are heard as well as its WAV', async (t) => {
    const tts = plugin();
    try {
      const frames: AudioFrame[] = [];
      for await (const event of tts.synthesize(TEXT)) frames.push(event.frame);
      const played = framesAsWav(frames);
      const wav = await wavOf(TEXT);
      const real = secondsOf(wav);
      // The plugin keeps whole frames only (it never flushes its AudioByteStream): up to one short.
      assert.ok(
        played.seconds <= real && real - played.seconds < FRAME_SECONDS,
        `labelled ${played.seconds} s, real ${real} s`,
      );
      const byFrames = wordErrorRate(TEXT, await heard(played.wav));
      const byWav = wordErrorRate(TEXT, await heard(wav));
      t.diagnostic(`labelled ${played.seconds} s, real ${real} s; WER ${byFrames} (frames), ${byWav} (WAV)`);
      assert.ok(byFrames <= byWav, `WER ${byFrames} through LiveKit, ${byWav} as a WAV`);
    } finally {
      await tts.close();
    }
  });

  test('StreamAdapter + SentenceTokenizer (what AgentSession does), text pushed in pieces: one request per sentence, each the right length', async (t) => {
    const tts = plugin();
    const adapter = new ttslib.StreamAdapter(tts, new tokenize.basic.SentenceTokenizer());
    const stream = adapter.stream();
    try {
      for (let at = 0; at < TEXT.length; at += 3) stream.pushText(TEXT.slice(at, at + 3));
      stream.flush();
      stream.endInput();
      const frames: AudioFrame[] = [];
      for await (const event of stream) {
        if (event === ttslib.SynthesizeStream.END_OF_STREAM) break;
        frames.push(event.frame);
      }
      const played = framesAsWav(frames);
      const real = (await Promise.all(SENTENCES.map(wavOf))).map(secondsOf).reduce((a, b) => a + b);
      assert.ok(
        played.seconds <= real && real - played.seconds < SENTENCES.length * FRAME_SECONDS,
        `labelled ${played.seconds} s, real ${real} s over ${SENTENCES.length} sentences`,
      );
      const byFrames = wordErrorRate(TEXT, await heard(played.wav));
      const byWav = wordErrorRate(TEXT, await heard(await wavOf(TEXT)));
      t.diagnostic(`labelled ${played.seconds} s, real ${real} s; WER ${byFrames} (frames), ${byWav} (WAV)`);
      assert.ok(byFrames <= byWav, `WER ${byFrames} through the adapter, ${byWav} as a WAV`);
    } finally {
      stream.close();
      await adapter.close();
      await tts.close();
    }
  });
});
