/**
 * A Wyoming `synthesize` resolves its voice as POST /v1/audio/speech resolves `voice`
 * (src/api/speech/request.ts; issue 40, item 1): a model's voice preset, a voice_dir file and the
 * model's default preset give the same audio over both protocols. Before, Wyoming only unaliased
 * the name, so a preset or a voice_dir name reached flite as an unknown voice, and a model's
 * default preset was not applied; and Wyoming had no ffmpeg, so a library voice only ffmpeg reads failed.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { lazyModel } from '../helpers/models.js';
import { suiteServer } from '../helpers/suite-server.js';
import { post } from '../helpers/voxd.js';
import { audioOf, WyomingClient } from '../helpers/wyoming.js';
import { sineWav } from '../http/wav-helpers.js';

const TEXT = 'Turn on the lights.';
/** flite's rate, so that HTTP's pcm needs no resampling and the samples can be compared exactly. */
const RATE = 16000;

describe('Wyoming voices are HTTP voices', () => {
  const s = suiteServer(
    (scratch) => {
      const voices = join(scratch, 'voices');
      mkdirSync(voices);
      // A library voice: flite does not clone, so it speaks its default voice with the reference.
      writeFileSync(join(voices, 'guest.wav'), sineWav(RATE, 1, 16, 1600));
      // A mu-law WAV: only ffmpeg reads it, so Wyoming needs the server's ffmpeg as HTTP has it.
      writeFileSync(join(scratch, 'guest.wav'), sineWav(RATE, 1, 16, 1600));
      const phone = join(voices, 'phone.wav');
      execFileSync('ffmpeg', ['-v', 'error', '-i', join(scratch, 'guest.wav'), '-c:a', 'pcm_mulaw', phone]);
      return {
        wyoming_port: 0,
        voice_dir: voices,
        models: [
          lazyModel('flite', 'flite_tts', 'tts', { voice_presets: { narrator: { voice_id: 'slt' } } }),
          lazyModel('flite-house', 'flite_tts', 'tts', {
            voice_presets: { house: { voice_id: 'awb' } },
            default_voice_preset: 'house',
          }),
        ],
      };
    },
    { scratch: 'voxd-wyoming-voices-' },
  );

  /** A synthesis over Wyoming: its PCM; a failure names the error event's text. */
  async function wyoming(voice: Record<string, unknown>): Promise<Buffer> {
    const c = await WyomingClient.open(s.voxd.wyoming!.port);
    try {
      c.send('synthesize', { text: TEXT, voice });
      await c.next('audio-stop', 0, 30_000).catch((err: Error) => {
        const error = c.events.find((e) => e.type === 'error');
        throw new Error(`synthesize ${JSON.stringify(voice)}: ${error ? error.data.text : err.message}`);
      });
      assert.equal(c.events[0]!.data.rate, RATE);
      return audioOf(c.events);
    } finally {
      await c.close();
    }
  }

  async function http(model: string, voice?: string): Promise<Buffer> {
    const res = await post(s.url, '/v1/audio/speech', {
      model,
      input: TEXT,
      response_format: 'pcm',
      sample_rate: RATE,
      ...(voice === undefined ? {} : { voice }),
    });
    assert.equal(res.status, 200, res.body.toString('utf8'));
    return res.body;
  }

  test('a voice preset speaks its engine voice, by name and as a speaker', async () => {
    const slt = await http('flite', 'slt');
    const preset = await wyoming({ name: 'flite:narrator' });
    assert.ok(preset.equals(await http('flite', 'narrator')), 'the preset over HTTP');
    assert.ok(preset.equals(slt), "the preset's voice_id, slt");
    assert.ok(!preset.equals(await http('flite')), 'not the default voice');
    const speaker = await wyoming({ name: 'flite', speaker: 'narrator' });
    assert.ok(speaker.equals(slt), 'the preset named as the speaker');
  });

  test('a voice_dir voice is found by its name', async () => {
    const library = await wyoming({ name: 'flite:guest' });
    assert.ok(library.length > 0);
    assert.ok(library.equals(await http('flite', 'guest')), 'the library voice over HTTP');
  });

  test('a voice_dir voice only ffmpeg reads (mu-law WAV) is read as on HTTP', async () => {
    const phone = await wyoming({ name: 'flite:phone' });
    assert.ok(phone.length > 0);
    assert.ok(phone.equals(await http('flite', 'phone')), 'the mu-law library voice over HTTP');
  });

  test("without a voice, the model's default preset applies", async () => {
    const voiceless = await wyoming({ name: 'flite-house' });
    assert.ok(voiceless.equals(await http('flite-house')), 'a voiceless HTTP request');
    assert.ok(voiceless.equals(await http('flite', 'awb')), "the default preset's voice_id, awb");
  });
});
