/**
 * The voices Wyoming's `info` offers Home Assistant (issue 39, item 8: 42 entries of model times
 * OpenAI name, none of flite's own voices, espeak as the default). HA lists each voice by its
 * description, sorted, and sends no voice until one is picked (home-assistant/core,
 * components/wyoming/tts.py), so: each engine voice once, each listed name speaking, each one a
 * different voice, and the voiceless default the model OpenAI's `tts-1` names.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import { lazyModel } from '../helpers/models.js';
import { suiteServer } from '../helpers/suite-server.js';
import { post } from '../helpers/voxd.js';
import { audioOf, WyomingClient } from '../helpers/wyoming.js';

interface Voice {
  name: string;
  description: string;
  languages: string[];
  installed: boolean;
  speakers?: { name: string }[];
}

const TEXT = 'Turn on the lights.';

describe('Wyoming info: the voices Home Assistant offers', () => {
  // The embedded speech models in the embedded order: espeak registers first.
  const s = suiteServer({
    wyoming_port: 0,
    models: [
      lazyModel('espeak', 'espeak_tts', 'tts'),
      lazyModel('festival', 'festival_tts', 'tts'),
      lazyModel('flite', 'flite_tts', 'tts'),
    ],
  });

  async function info(): Promise<Voice[]> {
    const c = await WyomingClient.open(s.voxd.wyoming!.port);
    try {
      c.send('describe');
      return (await c.next('info')).data.tts[0].voices;
    } finally {
      await c.close();
    }
  }

  /** A synthesis as HA sends it: the PCM and its rate. */
  async function speak(voice: Record<string, unknown> | undefined): Promise<{ rate: number; pcm: Buffer }> {
    const c = await WyomingClient.open(s.voxd.wyoming!.port);
    try {
      c.send('synthesize', voice ? { text: TEXT, voice } : { text: TEXT });
      await c.next('audio-stop', 0, 30_000);
      return { rate: c.events[0]!.data.rate, pcm: audioOf(c.events) };
    } finally {
      await c.close();
    }
  }

  const digest = (pcm: Buffer) => createHash('sha256').update(pcm).digest('hex');

  test('each engine voice once, under names and descriptions that are all different', async () => {
    const voices = await info();
    const names = voices.map((v) => v.name);
    assert.deepEqual(
      names.filter((n) => n.startsWith('flite')),
      ['flite', 'flite:kal', 'flite:slt', 'flite:rms', 'flite:awb'],
    );
    assert.deepEqual(
      names.filter((n) => n.startsWith('festival')),
      ['festival'],
      'slt is festival’s only voice',
    );
    // espeak's voice ids are open-ended: it offers the 13 distinct voices its OpenAI names speak.
    assert.equal(names.filter((n) => n.startsWith('espeak')).length, 13, names.join(' '));
    assert.ok(names.includes('espeak:en-us+f3'), names.join(' '));
    assert.equal(new Set(names).size, names.length, names.join(' '));
    const descriptions = voices.map((v) => v.description);
    assert.equal(new Set(descriptions).size, descriptions.length, descriptions.join(' | '));
    // OpenAI's names are not entries of their own; the description says which voice each speaks.
    assert.ok(!names.some((n) => /:(alloy|nova|coral)$/.test(n)), names.join(' '));
    const slt = voices.find((v) => v.name === 'flite:slt')!;
    assert.match(slt.description, /^flite slt \(.*coral.*nova/);
    for (const v of voices) {
      assert.equal(v.installed, true);
      assert.deepEqual(v.languages, ['en']);
    }
  });

  test('the default comes first, carries the engine voices as speakers, and is what a voiceless synthesize gets', async () => {
    const [first] = await info();
    assert.equal(first!.name, 'flite', 'the model tts-1 names, not espeak, the first registered');
    assert.match(first!.description, /^flite kal16 \(alloy/);
    assert.deepEqual(
      first!.speakers?.map((sp) => sp.name),
      ['kal16', 'kal', 'slt', 'rms', 'awb'],
    );
    const voiceless = await speak(undefined);
    assert.equal(voiceless.rate, 16000, 'flite’s rate; espeak would be 22050, festival 32000');
    const http = await post(s.url, '/v1/audio/speech', {
      model: 'flite',
      input: TEXT,
      response_format: 'pcm',
      sample_rate: 16000,
    });
    assert.equal(http.status, 200);
    assert.ok(voiceless.pcm.equals(http.body), 'flite’s default voice over HTTP is the same audio');
  });

  test('every listed voice and speaker speaks, and no two of a model speak alike', async () => {
    const voices = await info();
    const heard = new Map<string, string>();
    const listen = async (label: string, voice: Record<string, unknown>) => {
      const { pcm } = await speak(voice);
      assert.ok(pcm.length > 0, `${label} gave no audio`);
      heard.set(label, digest(pcm));
    };
    for (const v of voices) await listen(v.name, { name: v.name });
    for (const v of voices)
      for (const sp of v.speakers ?? [])
        await listen(`${v.name} speaker ${sp.name}`, { name: v.name, speaker: sp.name });
    for (const model of ['espeak', 'flite']) {
      const own = voices.filter((v) => v.name.split(':')[0] === model).map((v) => heard.get(v.name));
      assert.equal(new Set(own).size, own.length, `${model}: two listed voices sound the same`);
    }
    // A speaker is the voice of the same name.
    assert.equal(heard.get('flite speaker slt'), heard.get('flite:slt'));
    assert.equal(heard.get('flite speaker kal16'), heard.get('flite'));
  });
});
