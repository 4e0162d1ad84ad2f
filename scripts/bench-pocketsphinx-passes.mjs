// Issue 39: pocketsphinx with and without its second, flat-lexicon search pass (`-fwdflat`), decoded
// live (quarter-second steps, as realtime turns and the live route are) and whole (as uploads are):
// the word error rate over the five LibriVox clips of Debian's pocketsphinx-testdata and 28 flite
// sentences (7 sentences, 4 voices, spoken by an in-process voxd), and the time the end of an
// utterance takes (ps_end_utt and the hypothesis after it), which a realtime commit waits for.
// Not a test: it prints Markdown for docs/performance.md.
// Usage: npm run build && node scripts/bench-pocketsphinx-passes.mjs

import { readFileSync } from 'node:fs';
import { PsDecoder } from '../dist/src/engines/pocketsphinx/ps-decoder.js';
import { request, startServer } from '../dist/test/helpers/voxd.js';
import { wordErrorRate } from '../dist/test/helpers/wer.js';

const MODEL = '/usr/share/pocketsphinx/model/en-us';
const LIBRIVOX = '/usr/share/pocketsphinx/test/data/librivox/';
const SENTENCES = [
  'Please call me tomorrow morning about the weather.',
  'Turn on the living room lamp and close the kitchen door.',
  'The meeting moved to Thursday at three in the afternoon.',
  'She bought seven green apples at the market yesterday.',
  'How far is it from the station to the old bridge?',
  'The quick brown fox jumps over the lazy dog while seven happy children watch from the old wooden bridge today.',
  'Set a timer for twenty minutes and remind me to check the oven.',
];

const int16 = (buf) => new Int16Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));

const references = new Map(
  readFileSync(`${LIBRIVOX}transcription`, 'utf8')
    .trim()
    .split('\n')
    .map((line) => {
      const [, text, id] = line.match(/^<s> (.*) <\/s> \(.*-(\d+)\)$/);
      return [id, text];
    }),
);
const librivox = [...references].map(([id, reference]) => ({
  reference,
  pcm: int16(readFileSync(`${LIBRIVOX}sense_and_sensibility_01_austen_64kb-${id}.wav`).subarray(44)),
}));

const server = await startServer({ models: [{ id: 'flite', family: 'flite_tts', task: 'tts' }] });
const flite = [];
for (const voice of ['slt', 'rms', 'awb', 'kal'])
  for (const sentence of SENTENCES) {
    const res = await request(server.url, 'POST', '/v1/audio/speech', {
      body: JSON.stringify({
        model: 'flite',
        input: sentence,
        voice,
        response_format: 'pcm',
        sample_rate: 16000,
      }),
      headers: { 'content-type': 'application/json' },
    });
    flite.push({ reference: sentence.toLowerCase().replace(/[.,?]/g, ''), pcm: int16(res.body) });
  }
await server.close();

const files = { hmm: `${MODEL}/en-us`, lm: `${MODEL}/en-us.lm.bin`, dict: `${MODEL}/cmudict-en-us.dict` };
console.log('| decoder | clips | WER live | WER whole | end of a live utterance, mean ms |');
console.log('|---|---|---:|---:|---:|');
for (const [name, options] of [
  ["with -fwdflat (pocketsphinx's default)", []],
  ['-fwdflat no', ['-fwdflat', 'no']],
]) {
  const decoder = new PsDecoder(files, options);
  for (const [set, clips] of [
    ['LibriVox (5)', librivox],
    ['flite (28)', flite],
  ]) {
    let live = 0;
    let whole = 0;
    let endMs = 0;
    for (const { reference, pcm } of clips) {
      decoder.startFresh();
      for (let at = 0; at < pcm.length; at += 4000) {
        decoder.feedPart(pcm.subarray(at, at + 4000));
        decoder.hypothesis();
      }
      const at = performance.now();
      decoder.endUtt();
      const heard = decoder.hypothesis();
      endMs += performance.now() - at;
      live += wordErrorRate(reference, heard);
      decoder.startFresh();
      decoder.decodeWhole(pcm);
      decoder.endUtt();
      whole += wordErrorRate(reference, decoder.hypothesis());
    }
    const n = clips.length;
    console.log(
      `| ${name} | ${set} | ${(live / n).toFixed(3)} | ${(whole / n).toFixed(3)} | ${(endMs / n).toFixed(0)} |`,
    );
  }
}
