/**
 * Issue 39: words once sent are never taken back, and a streamed recording says what the plain one
 * says. 20 clips (the five LibriVox recordings of Debian's pocketsphinx test data, and five flite
 * sentences in three voices) go through every streaming path pocketsphinx has, on a real voxd:
 * HTTP `stream=true` and the HTTP live route, a realtime session that commits by hand (heard as it
 * is appended), and Wyoming at speaking pace (live) and sent at once (searched whole). On each,
 * the deltas or transcript-chunks joined are the final text, exactly; the streamed answers of a
 * recording (HTTP `stream=true`, Wyoming sent at once) are its plain answer's words.
 *
 * Before the fix, the clients' run of 2026-12 saw deltas "then love", " the" end in "then lock the
 * front yard", and a streamed upload give other words than the plain one.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { wavHeader } from '../../../src/audio/wav-encode.js';
import { type ClipId, heardLive, heardStreamed, LIBRIVOX_RATE, librivoxWav } from '../../helpers/librivox.js';
import { FLITE, lazyModel } from '../../helpers/models.js';
import { suiteServer } from '../../helpers/suite-server.js';
import { request, type TestServer, transcribe } from '../../helpers/voxd.js';
import { openSocket } from '../../helpers/websocket.js';
import { WyomingClient } from '../../helpers/wyoming.js';

const LIBRIVOX: ClipId[] = ['0870', '0880', '0890', '0920', '0930'];
const SENTENCES = [
  'Please call me tomorrow morning about the weather.',
  'Turn on the living room lamp and close the kitchen door.',
  'The meeting moved to Thursday at three in the afternoon.',
  'She bought seven green apples at the market yesterday.',
  'How far is it from the station to the old bridge?',
];
const VOICES = ['slt', 'rms', 'awb'];
/** 100 ms of PCM16 at 16 kHz. */
const PIECE = (LIBRIVOX_RATE / 10) * 2;

interface Clip {
  name: string;
  /** PCM16 mono at 16 kHz. */
  pcm: Buffer;
}

async function fliteClip(s: TestServer, input: string, voice: string): Promise<Clip> {
  const res = await request(s.url, 'POST', '/v1/audio/speech', {
    body: JSON.stringify({
      model: 'flite',
      input,
      voice,
      response_format: 'pcm',
      sample_rate: LIBRIVOX_RATE,
    }),
    headers: { 'content-type': 'application/json' },
  });
  assert.equal(res.status, 200, res.body.toString());
  return { name: `flite ${voice}: ${input}`, pcm: res.body };
}

const wavOf = (pcm: Buffer) => Buffer.concat([wavHeader(LIBRIVOX_RATE, 1, pcm.length), pcm]);

/** A realtime session committing by hand: the turn's deltas joined, and its transcript. */
async function realtimeManual(s: TestServer, pcm: Buffer): Promise<{ deltas: string; text: string }> {
  const { ws, messages, send, closed } = await openSocket(`${s.url}/v1/realtime?model=pocketsphinx`);
  try {
    send({
      type: 'session.update',
      session: {
        type: 'transcription',
        audio: { input: { format: { type: 'audio/pcm', rate: LIBRIVOX_RATE }, turn_detection: null } },
      },
    });
    await messages.next('session.updated');
    for (let at = 0; at < pcm.length; at += PIECE)
      send({ type: 'input_audio_buffer.append', audio: pcm.subarray(at, at + PIECE).toString('base64') });
    send({ type: 'input_audio_buffer.commit' });
    const completed = await messages.next('conversation.item.input_audio_transcription.completed', 0, 60_000);
    const deltas = messages.all
      .filter(
        (m) =>
          m.type === 'conversation.item.input_audio_transcription.delta' && m.item_id === completed.item_id,
      )
      .map((m) => m.delta as string);
    return { deltas: deltas.join(''), text: completed.transcript };
  } finally {
    ws.close();
    await closed;
  }
}

/**
 * A Wyoming transcription: `paced`, its first second comes at speaking pace (the exchange goes
 * live), the rest at once; else all at once (searched whole at audio-stop).
 */
async function wyoming(
  s: TestServer,
  pcm: Buffer,
  paced: boolean,
): Promise<{ chunks: string; text: string }> {
  const c = await WyomingClient.open(s.voxd.wyoming!.port);
  try {
    const format = { rate: LIBRIVOX_RATE, width: 2, channels: 1 };
    c.send('transcribe', { name: 'pocketsphinx', language: 'en' });
    c.send('audio-start', format);
    for (let at = 0; at < pcm.length; at += PIECE) {
      c.send('audio-chunk', format, pcm.subarray(at, at + PIECE));
      // A microphone's pace for the first second: 100 ms of audio every 80 ms or more.
      if (paced && at < LIBRIVOX_RATE * 2) await sleep(80);
    }
    c.send('audio-stop');
    const transcript = await c.next('transcript', 0, 60_000);
    await c.next('transcript-stop');
    const chunks = c.events.filter((e) => e.type === 'transcript-chunk').map((e) => e.data.text as string);
    if (paced) assert.ok(chunks.length > 0, 'a live exchange sends chunks');
    return { chunks: chunks.join(''), text: transcript.data.text };
  } finally {
    await c.close();
  }
}

describe('pocketsphinx: streamed words are never taken back, on every streaming path', {
  timeout: 600_000,
}, () => {
  const s = suiteServer({
    wyoming_port: 0,
    busy_timeout_ms: 0,
    models: [FLITE, lazyModel('pocketsphinx', 'pocketsphinx_asr', 'asr', { mode: 'streaming' })],
  });

  test('20 clips: the joined deltas and chunks are the final text on each path; streamed recordings say what plain ones say', async () => {
    const clips: Clip[] = LIBRIVOX.map((id) => ({
      name: `LibriVox ${id}`,
      pcm: librivoxWav(id).subarray(44),
    }));
    for (const voice of VOICES)
      for (const sentence of SENTENCES) clips.push(await fliteClip(s, sentence, voice));
    assert.equal(clips.length, 20);
    for (const clip of clips) {
      const wav = wavOf(clip.pcm);
      const res = await transcribe(s.url, 'pocketsphinx', wav, { language: 'en' });
      assert.equal(res.status, 200, res.body.toString());
      const plain = res.json.text as string;
      assert.ok(plain.split(' ').length >= 3, `${clip.name}: heard "${plain}"`);

      const streamed = await heardStreamed(s.url, 'pocketsphinx', wav, 'clip.wav');
      assert.equal(streamed.text, plain, `${clip.name}: HTTP stream=true and plain`);
      assert.equal(streamed.deltas, streamed.text, `${clip.name}: HTTP stream=true deltas`);

      const live = await heardLive(s.url, 'pocketsphinx', wav);
      assert.equal(live.deltas, live.text, `${clip.name}: HTTP live route deltas`);

      const realtime = await realtimeManual(s, clip.pcm);
      assert.equal(realtime.deltas, realtime.text, `${clip.name}: realtime deltas`);
      assert.ok(realtime.text.split(' ').length >= 3, `${clip.name}: realtime heard "${realtime.text}"`);

      const whole = await wyoming(s, clip.pcm, false);
      assert.equal(whole.text, plain, `${clip.name}: Wyoming sent at once and HTTP plain`);
      assert.equal(whole.chunks, whole.text, `${clip.name}: Wyoming chunks, sent at once`);

      const paced = await wyoming(s, clip.pcm, true);
      assert.equal(paced.chunks, paced.text, `${clip.name}: Wyoming chunks, at speaking pace`);
    }
  });
});
