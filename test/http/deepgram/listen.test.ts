/**
 * `/v1/listen`, Deepgram's live transcription, driven by a raw WebSocket as Deepgram's protocol
 * has it: a real spoken clip (LibriVox) in 40 ms frames at real time, transcribed by pocketsphinx
 * with silero finding the utterances. Interim Results carry the words so far and are never taken
 * back; the final has speech_final and the engine's timed words; Finalize, CloseStream, the
 * closing Metadata; and the bad input a client can send.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { paced, RATE, REFERENCE, spoken } from '../../helpers/deepgram-listen.js';
import { heardLive, librivoxWav } from '../../helpers/librivox.js';
import { muLaw } from '../../helpers/samples.js';
import { engineSuiteServer } from '../../helpers/suite-server.js';
import { type Message, openSocket, type Socket } from '../../helpers/websocket.js';
import { wordErrorRate } from '../../helpers/wer.js';

const MODELS = [
  { id: 'pocketsphinx', family: 'pocketsphinx_asr', task: 'asr', mode: 'streaming', lazy: true },
  { id: 'silero-vad', family: 'silero_vad', task: 'vad', lazy: true },
];

const results = (m: Message[]) => m.filter((x) => x.type === 'Results');
const text = (r: Message) => r.channel.alternatives[0].transcript as string;

describe('/v1/listen over a raw WebSocket', () => {
  const s = engineSuiteServer(MODELS);

  const open = (query: string): Promise<Socket> =>
    openSocket(`${s.url}/v1/listen?encoding=linear16&sample_rate=${RATE}&${query}`);

  test('a spoken clip gives interim words, a speech_final with timed words, then CloseStream ends it', async (t) => {
    const ids = ['0880', '0890', '0930'] as const;
    const clip = spoken([...ids]);
    // The same engine hearing the same clips live through /v1/audio/transcriptions (a chunked body);
    // the model is loaded by then, as a voice agent's is.
    const http: string[] = [];
    for (const id of ids) http.push((await heardLive(s.url, 'pocketsphinx', librivoxWav(id))).text);
    const socket = await open('interim_results=true&vad_events=true&endpointing=800&utterance_end_ms=1000');
    await paced(clip.pcm, (frame) => socket.ws.send(frame));
    socket.send({ type: 'CloseStream' });
    const metadata = await socket.messages.next('Metadata', 0, 20_000);
    assert.equal(await socket.closed, 1000);
    const all = socket.messages.all;
    const types = all.map((m: Message) => m.type);
    t.diagnostic(all.map(shown).join(' | '));
    assert.ok(types.indexOf('SpeechStarted') < types.indexOf('Results'), types.join(' '));
    assert.ok(
      results(all).some((r) => !r.is_final),
      'interim Results during speech',
    );
    const finals = results(all).filter((r) => r.is_final);
    const heard = finals.map(text).join(' ');
    const [live, whole] = [
      wordErrorRate(clip.reference, heard),
      wordErrorRate(clip.reference, http.join(' ')),
    ];
    t.diagnostic(
      `WER /v1/listen ${live.toFixed(3)} "${heard}"; /v1/audio/transcriptions ${whole.toFixed(3)} "${http.join(' ')}"`,
    );
    // pocketsphinx's live search settles on words a quarter second of audio at a time from the
    // utterance's first sample, and the VAD starts an utterance where its windows, which follow the
    // audio's arrival, find speech: the words vary from run to run either way (0880 and 0930 lost
    // or gained two words between runs). Six words in thirty is that spread; a broken stream (lost
    // or misaligned audio) is far past it.
    assert.ok(live <= whole + 0.2, `/v1/listen's WER ${live} > ${whole} + 0.2`);
    // Words are never taken back: within an utterance each interim extends the one before, and its
    // final starts with the last interim's words.
    let before: string[] = [];
    for (const r of results(all)) {
      const words = text(r).split(' ').filter(Boolean);
      assert.deepEqual(
        words.slice(0, before.length),
        before,
        `"${text(r)}" takes back "${before.join(' ')}"`,
      );
      before = r.is_final ? [] : words;
    }
    const last = finals.at(-1);
    assert.equal(last.speech_final, true, 'the utterance ended by its silence');
    assert.equal(last.from_finalize, false);
    for (const final of finals) {
      const words = final.channel.alternatives[0].words;
      assert.equal(words.map((w: Message) => w.word).join(' '), text(final));
      for (const w of words) assert.ok(w.start <= w.end && w.start >= final.start - 0.001, JSON.stringify(w));
    }
    const lastWord = last.channel.alternatives[0].words.at(-1);
    const speechEnd = clip.speechEndsMs.at(-1)! / 1000;
    assert.ok(
      lastWord.end > speechEnd - 1 && lastWord.end <= speechEnd + 0.1,
      `${JSON.stringify(lastWord)}, speech ends ${speechEnd}`,
    );
    assert.ok(types.lastIndexOf('UtteranceEnd') > types.lastIndexOf('Results'), types.join(' '));
    assert.equal(metadata.channels, 1);
    assert.ok(Math.abs(metadata.duration - clip.pcm.length / 2 / RATE) < 0.01, String(metadata.duration));
  });

  test('mulaw at 8 kHz (telephony) is decoded, heard and timed', async () => {
    const clip = spoken(['0880'], { tailMs: 1000 });
    const pcm = new Int16Array(clip.pcm.buffer, clip.pcm.byteOffset, clip.pcm.length / 2);
    // 16 kHz to 8 kHz by a two-tap average, then G.711 mu-law, as a phone gateway sends it.
    const ulaw = Buffer.alloc(pcm.length / 2);
    for (let i = 0; i < ulaw.length; i++) ulaw[i] = muLaw((pcm[2 * i]! + pcm[2 * i + 1]!) / 2);
    const socket = await openSocket(`${s.url}/v1/listen?encoding=mulaw&sample_rate=8000&endpointing=500`);
    // paced() counts 16 kHz PCM16 bytes (32 a ms): 160 mu-law bytes are 20 ms, sent every 10 ms.
    await paced(ulaw, (frame) => socket.ws.send(frame), { frameBytes: 160, speed: 0.5 });
    socket.send({ type: 'CloseStream' });
    const metadata = await socket.messages.next('Metadata', 0, 20_000);
    const heard = results(socket.messages.all)
      .filter((r) => r.is_final)
      .map(text)
      .join(' ');
    // pocketsphinx's live search hears band-limited audio poorly from its start (its live
    // normalisation begins from a wideband mean), but the words it keeps are there; a wrong law or
    // rate would give none of them.
    assert.match(heard, /was not/);
    assert.ok(Math.abs(metadata.duration - ulaw.length / 8000) < 0.01, String(metadata.duration));
  });

  test('without encoding a WAV stream is read from its header; another container closes 1008 DATA-0000', async () => {
    const wav = librivoxWav('0880');
    const socket = await openSocket(`${s.url}/v1/listen?endpointing=500`);
    // The header split across frames, as a pipe delivers it.
    socket.ws.send(wav.subarray(0, 20));
    await paced(wav.subarray(20), (frame) => socket.ws.send(frame), { speed: 2 });
    socket.send({ type: 'CloseStream' });
    const metadata = await socket.messages.next('Metadata', 0, 20_000);
    const heard = results(socket.messages.all)
      .filter((r) => r.is_final)
      .map(text)
      .join(' ');
    assert.ok(wordErrorRate(REFERENCE['0880'], heard) <= 0.5, heard);
    assert.ok(Math.abs(metadata.duration - (wav.length - 44) / 2 / RATE) < 0.01, String(metadata.duration));

    const ogg = await openSocket(`${s.url}/v1/listen`);
    const closed = new Promise<[number, string]>((resolve) =>
      ogg.ws.on('close', (code, reason) => resolve([code, reason.toString()])),
    );
    ogg.ws.send(Buffer.concat([Buffer.from('OggS'), Buffer.alloc(60)]));
    const [code, reason] = await closed;
    assert.equal(code, 1008, reason);
    assert.match(reason, /^DATA-0000 .*Ogg/);
  });
});

const shown = (m: Message) =>
  m.type === 'Results'
    ? `${m.is_final ? (m.speech_final ? 'speech_final' : 'final') : 'interim'}[${m.start}+${m.duration}]"${text(m)}"`
    : m.type;
