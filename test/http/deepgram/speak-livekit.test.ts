/**
 * LiveKit Agents' Deepgram TTS (@livekit/agents-plugin-deepgram 1.9.0, unmodified) against voxd by
 * its `baseUrl` alone (issue 41): `stream()` opens `/v1/speak`, sends each sentence its tokenizer
 * finds as a Speak, then Flush, and ends at Flushed. The frames it yields, played at the rate they
 * are labelled with, must be heard by voxd's STT as well as the same text through
 * /v1/audio/speech. The plugin's non-streaming `synthesize()` is not driven: it hard-codes https
 * and port 443 (docs/deepgram.md). Engines: flite speaks, pocketsphinx listens.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { initializeLogger, tts as ttslib } from '@livekit/agents';
import * as deepgram from '@livekit/agents-plugin-deepgram';
import type { AudioFrame } from '@livekit/rtc-node';
import { encodeWav } from '../../../src/audio/wav-encode.js';
import { FLITE, lazyModel } from '../../helpers/models.js';
import { suiteServer } from '../../helpers/suite-server.js';
import { post, transcribe } from '../../helpers/voxd.js';
import { wordErrorRate } from '../../helpers/wer.js';

const POCKETSPHINX = lazyModel('pocketsphinx', 'pocketsphinx_asr', 'asr');
const TEXT = 'Please call me tomorrow morning. The weather is nice today.';

initializeLogger({ pretty: false, level: 'warn' });

describe('LiveKit Agents Deepgram TTS (plugin 1.9.0) against voxd', () => {
  const s = suiteServer({ models: [FLITE, POCKETSPHINX] });

  async function heard(wav: Buffer): Promise<string> {
    const res = await transcribe(s.url, 'pocketsphinx', wav);
    assert.equal(res.status, 200, res.body.toString());
    return res.json.text as string;
  }

  test('stream(): text pushed in pieces, frames labelled 24 kHz, heard as well as /v1/audio/speech', async (t) => {
    const tts = new deepgram.TTS({ baseUrl: s.url, apiKey: 'unused' });
    const stream = tts.stream();
    try {
      for (let at = 0; at < TEXT.length; at += 4) stream.pushText(TEXT.slice(at, at + 4));
      stream.flush();
      stream.endInput();
      const frames: AudioFrame[] = [];
      for await (const event of stream) {
        if (event === ttslib.SynthesizeStream.END_OF_STREAM) break;
        frames.push(event.frame);
      }
      assert.deepEqual([...new Set(frames.map((f) => f.sampleRate))], [24000]);
      const samples = new Float32Array(frames.reduce((n, f) => n + f.samplesPerChannel, 0));
      let at = 0;
      for (const f of frames) for (const v of f.data) samples[at++] = v / 32768;
      assert.ok(samples.length > 24000, `${samples.length} samples`);
      const byPlugin = wordErrorRate(
        TEXT,
        await heard(encodeWav({ samples, sampleRate: 24000, channels: 1 })),
      );
      const wav = await post(s.url, '/v1/audio/speech', {
        model: 'flite',
        input: TEXT,
        response_format: 'wav',
      });
      assert.equal(wav.status, 200);
      const byWav = wordErrorRate(TEXT, await heard(wav.body));
      t.diagnostic(`WER ${byPlugin} (plugin), ${byWav} (/v1/audio/speech)`);
      assert.ok(byPlugin <= byWav, `WER ${byPlugin} through the plugin, ${byWav} as a WAV`);
    } finally {
      stream.close();
      await tts.close();
    }
  });
});
