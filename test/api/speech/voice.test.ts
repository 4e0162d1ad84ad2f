/** resolveVoice (src/api/speech/voice.ts): the voice resolution order and the voice_ref forms. */

import assert from 'node:assert/strict';
import { mkdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { resolveVoice, type VoiceChoice } from '../../../src/api/speech/voice.js';
import { floats } from '../../../src/audio/pcm16-audio.js';
import type { Audio } from '../../../src/audio/types.js';
import { parseModelConfig } from '../../../src/config/model-config.js';
import type { ModelConfig } from '../../../src/config/types.js';
import { VoxdError } from '../../../src/errors.js';
import { type ResolvedPreset, resolvePresets } from '../../../src/runtime/voice-presets.js';
import { tempDir } from '../../helpers/voxd.js';
import { buildWav, sine } from '../../http/wav-helpers.js';

/** A mono 16-bit WAV whose rate and length identify it in assertions. */
const wavOf = (sampleRate: number, frames: number) =>
  buildWav({ sampleRate, channels: 1, bits: 16, frames, sample: sine(200, 0.3, sampleRate) });

const ALICE = { rate: 16000, frames: 160 };
const OTHER = { rate: 8000, frames: 80 };
const BOB = { rate: 22050, frames: 50 };
const ERIN = { rate: 11025, frames: 30 };
const DAVE_FILE = { rate: 32000, frames: 40 };

function assertAudio(
  audio: Audio | undefined,
  expected: { rate: number; frames: number },
  what: string,
): void {
  assert.ok(audio, `${what}: no audio`);
  assert.equal(audio.sampleRate, expected.rate, `${what}: sample rate`);
  assert.equal(floats(audio).length / audio.channels, expected.frames, `${what}: frames`);
}

/** A path the client may not read: 403 with the one message that says nothing about the file. */
async function rejects403(promise: Promise<unknown>, field: string): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof VoxdError, `expected a VoxdError, got ${String(err)}`);
    assert.equal(err.status, 403);
    assert.equal(err.type, 'forbidden');
    assert.ok(
      err.message.startsWith(`${field}: a server-local file must be a readable regular file`),
      err.message,
    );
    return true;
  });
}

async function rejects400(promise: Promise<unknown>, ...parts: string[]): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof VoxdError, `expected a VoxdError, got ${String(err)}`);
    assert.equal(err.status, 400);
    assert.equal(err.type, 'invalid_request_error');
    for (const part of parts) assert.ok(err.message.includes(part), `"${part}" not in: ${err.message}`);
    return true;
  });
}

interface Model {
  config: ModelConfig;
  presets: Map<string, ResolvedPreset>;
}

describe('resolveVoice', () => {
  let root: string;
  let voiceDir: string;
  let server: Parameters<typeof resolveVoice>[3];
  let plain: Model;
  let namedDefault: Model;
  let inlineDefault: Model;
  let inlineRefDefault: Model;

  async function model(raw: Record<string, unknown>): Promise<Model> {
    const { model: config } = parseModelConfig(
      { id: 'm', family: 'fixture', path: '.', task: 'tts', ...raw },
      { key: 'models[0]', baseDir: root, lazyDefault: true, parallel: false, knownFamilies: ['fixture'] },
    );
    return { config, presets: await resolvePresets(config) };
  }

  const resolve = (body: Record<string, unknown>, m: Model, srv = server): Promise<VoiceChoice> =>
    resolveVoice(body, m.config, m.presets, srv);

  before(async () => {
    root = tempDir('voxd-voice-');
    voiceDir = join(root, 'voices');
    mkdirSync(join(voiceDir, 'sub'), { recursive: true });
    mkdirSync(join(voiceDir, 'folder.wav'));
    writeFileSync(join(root, 'alice.wav'), wavOf(ALICE.rate, ALICE.frames));
    writeFileSync(join(root, 'other.wav'), wavOf(OTHER.rate, OTHER.frames));
    writeFileSync(join(root, 'outside.wav'), wavOf(BOB.rate, BOB.frames));
    writeFileSync(join(voiceDir, 'bob.wav'), wavOf(BOB.rate, BOB.frames));
    writeFileSync(join(voiceDir, 'erin.wav'), wavOf(ERIN.rate, ERIN.frames));
    writeFileSync(join(voiceDir, 'dave.wav'), wavOf(DAVE_FILE.rate, DAVE_FILE.frames));
    writeFileSync(join(voiceDir, 'b.o.wav'), wavOf(BOB.rate, BOB.frames));
    writeFileSync(join(voiceDir, 'sub', 'bob.wav'), wavOf(BOB.rate, BOB.frames));
    writeFileSync(join(voiceDir, 'bob.wav.wav'), wavOf(BOB.rate, BOB.frames));
    writeFileSync(
      join(voiceDir, 'prompt_text'),
      'carol|Carol speaks\r\nbob|Bob says hi|twice\r\nbobby|not bob\r\n',
    );
    server = {
      voice_dir: voiceDir,
      access: { baseDir: root, roots: [realpathSync(root)] },
      limits: { maxSeconds: 0, maxBytes: 1 << 30 },
    };

    const presets = {
      alice: { voice_id: 'cached-alice', voice_ref: 'alice.wav', reference_text: 'Alice text' },
      idonly: { voice_id: 'only-id' },
      dave: { voice_id: 'preset-dave' },
    };
    plain = await model({ voice_presets: presets });
    namedDefault = await model({ voice_presets: presets, default_voice_preset: 'alice' });
    inlineDefault = await model({
      default_voice_preset: { voice_id: 'inline-id', reference_text: 'inline text' },
    });
    inlineRefDefault = await model({ default_voice_preset: { voice_ref: 'other.wav' } });
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  describe('1. a configured preset', () => {
    test('supplies voice id, reference audio and reference text', async () => {
      const choice = await resolve({ voice: 'alice' }, plain);
      assert.equal(choice.voiceId, 'cached-alice');
      assertAudio(choice.voiceRef, ALICE, 'preset audio');
      assert.equal(choice.referenceText, 'Alice text');
    });

    test('an explicit voice_ref replaces the preset audio only', async () => {
      const choice = await resolve({ voice: 'alice', voice_ref: 'other.wav' }, plain);
      assert.equal(choice.voiceId, 'cached-alice');
      assertAudio(choice.voiceRef, OTHER, 'explicit audio');
      assert.equal(choice.referenceText, 'Alice text');
    });

    test('an explicit reference_text wins over the preset text', async () => {
      const choice = await resolve({ voice: 'alice', reference_text: 'my words' }, plain);
      assert.equal(choice.referenceText, 'my words');
      assertAudio(choice.voiceRef, ALICE, 'preset audio');
    });

    test('an empty explicit reference_text still wins', async () => {
      const choice = await resolve({ voice: 'alice', reference_text: '' }, plain);
      assert.equal(choice.referenceText, '');
    });

    test('a preset with only a voice id gives only the id', async () => {
      assert.deepEqual(await resolve({ voice: 'idonly' }, plain), {
        voiceId: 'only-id',
        voiceRef: undefined,
        referenceText: undefined,
      });
    });

    test('a preset wins over a voice_dir file of the same name', async () => {
      const choice = await resolve({ voice: 'dave' }, plain);
      assert.equal(choice.voiceId, 'preset-dave');
      assert.equal(choice.voiceRef, undefined);
    });
  });

  describe('2. voice_dir/<name>.wav', () => {
    test('becomes clone audio with its transcript from prompt_text', async () => {
      const choice = await resolve({ voice: 'bob' }, plain);
      assert.equal(choice.voiceId, undefined);
      assertAudio(choice.voiceRef, BOB, 'voice_dir audio');
      // Only the first bar separates name and transcript; CRLF line ends are stripped.
      assert.equal(choice.referenceText, 'Bob says hi|twice');
    });

    test('an explicit reference_text wins over the transcript', async () => {
      const choice = await resolve({ voice: 'bob', reference_text: 'mine' }, plain);
      assertAudio(choice.voiceRef, BOB, 'voice_dir audio');
      assert.equal(choice.referenceText, 'mine');
    });

    test('a file without a prompt_text line has no reference text', async () => {
      const choice = await resolve({ voice: 'erin' }, plain);
      assertAudio(choice.voiceRef, ERIN, 'voice_dir audio');
      assert.equal(choice.referenceText, undefined);
    });

    test('is not looked up when the request has a voice_ref', async () => {
      const choice = await resolve({ voice: 'bob', voice_ref: 'other.wav' }, plain);
      assert.equal(choice.voiceId, 'bob');
      assertAudio(choice.voiceRef, OTHER, 'explicit audio');
      assert.equal(choice.referenceText, undefined);
    });

    test('names with dots or slashes are never looked up there', async () => {
      for (const voice of ['b.o', 'sub/bob', '../outside', 'bob.wav', 'sub\\bob']) {
        assert.deepEqual(
          await resolve({ voice }, plain),
          { voiceId: voice, voiceRef: undefined, referenceText: undefined },
          voice,
        );
      }
    });

    test('a folder named <name>.wav is not a voice file', async () => {
      assert.deepEqual(await resolve({ voice: 'folder' }, plain), {
        voiceId: 'folder',
        voiceRef: undefined,
        referenceText: undefined,
      });
    });

    test('without a voice_dir the name is passed through', async () => {
      const choice = await resolve({ voice: 'bob' }, plain, { ...server, voice_dir: undefined });
      assert.deepEqual(choice, { voiceId: 'bob', voiceRef: undefined, referenceText: undefined });
    });
  });

  describe('3. any other voice is the model-native voice id', () => {
    test('passed through unchanged, with the request reference_text', async () => {
      assert.deepEqual(await resolve({ voice: 'af_heart', reference_text: 'x' }, plain), {
        voiceId: 'af_heart',
        voiceRef: undefined,
        referenceText: 'x',
      });
    });

    test('a voice on a model with a default preset does not get the default', async () => {
      assert.deepEqual(await resolve({ voice: 'af_heart' }, namedDefault), {
        voiceId: 'af_heart',
        voiceRef: undefined,
        referenceText: undefined,
      });
    });
  });

  describe('4. the default preset, with neither voice nor voice_ref', () => {
    test('a named default preset is injected', async () => {
      const choice = await resolve({}, namedDefault);
      assert.equal(choice.voiceId, 'cached-alice');
      assertAudio(choice.voiceRef, ALICE, 'default preset audio');
      assert.equal(choice.referenceText, 'Alice text');
    });

    test('an empty voice counts as no voice', async () => {
      assert.equal((await resolve({ voice: '' }, namedDefault)).voiceId, 'cached-alice');
    });

    test('an explicit reference_text wins over the default preset text', async () => {
      const choice = await resolve({ reference_text: 'mine' }, namedDefault);
      assert.equal(choice.voiceId, 'cached-alice');
      assert.equal(choice.referenceText, 'mine');
    });

    test('an inline default preset is injected', async () => {
      assert.deepEqual(await resolve({}, inlineDefault), {
        voiceId: 'inline-id',
        voiceRef: undefined,
        referenceText: 'inline text',
      });
      const withRef = await resolve({}, inlineRefDefault);
      assertAudio(withRef.voiceRef, OTHER, 'inline default audio');
    });

    test('a voice_ref without a voice suppresses the default preset', async () => {
      const choice = await resolve({ voice_ref: 'alice.wav' }, inlineDefault);
      assert.equal(choice.voiceId, undefined);
      assertAudio(choice.voiceRef, ALICE, 'explicit audio');
      assert.equal(choice.referenceText, undefined);
    });

    test('no default preset: nothing is chosen', async () => {
      assert.deepEqual(await resolve({}, plain), { voiceRef: undefined, referenceText: undefined });
      assert.equal((await resolve({ reference_text: 't' }, plain)).referenceText, 't');
    });
  });

  describe('voice_ref forms', () => {
    test('a path string, relative to the base folder or absolute', async () => {
      assertAudio((await resolve({ voice_ref: 'other.wav' }, plain)).voiceRef, OTHER, 'relative');
      assertAudio((await resolve({ voice_ref: join(root, 'other.wav') }, plain)).voiceRef, OTHER, 'absolute');
    });

    test('{type:"path", path}', async () => {
      const choice = await resolve({ voice_ref: { type: 'path', path: 'alice.wav' } }, plain);
      assertAudio(choice.voiceRef, ALICE, 'typed path');
    });

    test('{type:"base64", data} with plain base64 or a data: URI', async () => {
      const b64 = wavOf(OTHER.rate, OTHER.frames).toString('base64');
      for (const data of [b64, `data:audio/wav;base64,${b64}`]) {
        const choice = await resolve({ voice_ref: { type: 'base64', data } }, plain);
        assertAudio(choice.voiceRef, OTHER, data.slice(0, 10));
      }
    });

    test('null counts as absent', async () => {
      assert.equal(
        (await resolve({ voice: 'alice', voice_ref: null }, plain)).voiceRef?.sampleRate,
        ALICE.rate,
      );
    });

    test('decoded audio up to 5 MiB is accepted; more is a 400 naming the limit', async () => {
      const limit = 5 * 1024 * 1024;
      const frames = (limit - 44) / 2;
      const atLimit = buildWav({ sampleRate: 16000, channels: 1, bits: 16, frames, sample: () => 0 });
      assert.equal(atLimit.length, limit);
      const ok = await resolve({ voice_ref: { type: 'base64', data: atLimit.toString('base64') } }, plain);
      assertAudio(ok.voiceRef, { rate: 16000, frames }, 'at the limit');
      const over = buildWav({
        sampleRate: 16000,
        channels: 1,
        bits: 16,
        frames: frames + 1,
        sample: () => 0,
      });
      await rejects400(
        resolve({ voice_ref: { type: 'base64', data: over.toString('base64') } }, plain),
        'voice_ref',
        String(limit),
      );
    });

    test('bad forms are 400s naming voice_ref', async () => {
      await rejects400(
        resolve({ voice_ref: { type: 'url', url: 'http://x/a.wav' } }, plain),
        'voice_ref',
        'url',
      );
      await rejects400(resolve({ voice_ref: { type: 'path' } }, plain), 'voice_ref');
      await rejects400(resolve({ voice_ref: { type: 'base64' } }, plain), 'voice_ref');
      await rejects400(resolve({ voice_ref: { path: 'alice.wav' } }, plain), 'voice_ref');
      await rejects400(resolve({ voice_ref: 5 }, plain), 'voice_ref', '5');
      await rejects400(resolve({ voice_ref: ['alice.wav'] }, plain), 'voice_ref');
    });

    test('bad contents are 400s naming the field', async () => {
      await rejects403(resolve({ voice_ref: 'missing.wav' }, plain), 'voice_ref');
      await rejects403(resolve({ voice_ref: { type: 'path', path: 'nope.wav' } }, plain), 'voice_ref.path');
      await rejects403(resolve({ voice_ref: '/etc/hostname' }, plain), 'voice_ref');
      await rejects400(
        resolve({ voice_ref: { type: 'base64', data: '' } }, plain),
        'voice_ref.data',
        'empty',
      );
      await rejects400(
        resolve({ voice_ref: { type: 'base64', data: '%%%' } }, plain),
        'voice_ref.data',
        'base64',
      );
      const text = Buffer.from('plain text, not a WAV').toString('base64');
      await rejects400(
        resolve({ voice_ref: { type: 'base64', data: text } }, plain),
        'voice_ref.data',
        'is not WAV; decoding it needs ffmpeg',
      );
      writeFileSync(join(root, 'bad.wav'), 'nope');
      await rejects400(resolve({ voice_ref: 'bad.wav' }, plain), 'voice_ref', 'is not WAV');
      await assert.rejects(
        resolve({ voice_ref: 'bad.wav' }, plain),
        (err: Error) => !err.message.includes('nope'),
      );
    });

    test('a bad voice_ref fails even when the voice is a preset', async () => {
      await rejects403(resolve({ voice: 'alice', voice_ref: 'missing.wav' }, plain), 'voice_ref');
    });
  });

  test('non-string voice or reference_text is a 400 naming the field', async () => {
    await rejects400(resolve({ voice: 5 }, plain), 'voice', '5');
    await rejects400(resolve({ voice: { name: 'alice' } }, plain), 'voice');
    await rejects400(resolve({ reference_text: ['a'] }, plain), 'reference_text');
  });
});
