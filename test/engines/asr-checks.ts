/** Checks that the tests of several sherpa-onnx ASR adapters share, over real HTTP. */
import assert from 'node:assert/strict';
import { toneWav } from '../helpers/samples.js';
import { transcribe } from '../helpers/voxd.js';

/**
 * Asserts that `model` (a fake model that hears "hello world" in a loud tone) transcribes one
 * second of tone, at 16 kHz mono and converted from 44.1 kHz stereo, as JSON with the audio's
 * duration, and as plain text.
 */
export async function expectHelloWorld(url: string, model: string): Promise<void> {
  for (const audio of [toneWav(), toneWav(44100, 2)]) {
    const res = await transcribe(url, model, audio);
    assert.equal(res.status, 200, res.body.toString());
    assert.equal(res.json.text, 'hello world');
    assert.equal(res.json.timing.audio_duration_ms, 1000);
  }
  const text = await transcribe(url, model, toneWav(), { response_format: 'text' });
  assert.equal(text.body.toString(), 'hello world');
}
