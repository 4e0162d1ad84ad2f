// How pocketsphinx's feature normalisation should start each utterance: the word error rate of the
// five LibriVox clips of Debian's pocketsphinx-testdata (and of the five joined with 1 s pauses),
// decoded offline (whole utterance at once) and streamed (quarter-second steps, as voxd streams),
// under each way of starting an utterance; whether answers change with the requests before; and
// the CPU time of an offline decode. Each way runs on a fresh decoder in this process, clips in
// file order; "old" is the code before issue 23 (nothing reset, the library's own live updates).
// Prints Markdown tables for docs/performance.md.
// Usage: npx tsc -p tsconfig.json && node scripts/bench-pocketsphinx-cmn.mjs [--repeat=N] [--options=...]
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_POCKETSPHINX_MODEL } from '../dist/src/engines/pocketsphinx/pocketsphinx-family.js';
import { CMN_BATCH, CMN_LIVE, PsDecoder } from '../dist/src/engines/pocketsphinx/ps-decoder.js';

const arg = (name) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const REPEAT = Number(arg('repeat') ?? 5);
/** `--options="-remove_silence no"`: pocketsphinx options (voxd gives none), to compare. */
const options = arg('options')?.split(' ').filter(Boolean) ?? [];
const DATA = '/usr/share/pocketsphinx/test/data/librivox';
const MODEL = {
  hmm: join(DEFAULT_POCKETSPHINX_MODEL, 'en-us'),
  lm: join(DEFAULT_POCKETSPHINX_MODEL, 'en-us.lm.bin'),
  dict: join(DEFAULT_POCKETSPHINX_MODEL, 'cmudict-en-us.dict'),
};
const STEP = 4000;

/** The clips and their reference words, from the test data's `transcription` file. */
const clips = readFileSync(join(DATA, 'transcription'), 'utf8')
  .trim()
  .split('\n')
  .map((line) => {
    const [, text, id] = /^<s> (.*) <\/s> \((.*)\)$/.exec(line);
    const wav = readFileSync(join(DATA, `${id}.wav`));
    return {
      name: id.slice(-4),
      words: text.split(' '),
      pcm: new Int16Array(wav.buffer.slice(wav.byteOffset + 44)),
    };
  });
const pause = new Int16Array(16000);
const joined = {
  name: 'all five, 1 s apart',
  words: clips.flatMap((c) => c.words),
  pcm: Int16Array.from(clips.flatMap((c, i) => [...(i ? pause : []), ...c.pcm])),
};

/** Word-level edit distance. */
function errors(reference, hypothesis) {
  let previous = Array.from({ length: hypothesis.length + 1 }, (_, j) => j);
  for (let i = 1; i <= reference.length; i++) {
    const row = [i];
    for (let j = 1; j <= hypothesis.length; j++)
      row[j] = Math.min(
        previous[j] + 1,
        row[j - 1] + 1,
        previous[j - 1] + (reference[i - 1] === hypothesis[j - 1] ? 0 : 1),
      );
    previous = row;
  }
  return previous[hypothesis.length];
}

/**
 * Ways to start an utterance, each given the decoder and the state it had right after ps_init. Fed
 * in steps, the decoder normalises live whatever the way: feat_cmn switches it to live for good.
 * "voxd" is PsDecoder.startFresh, decodeWhole and feedPart (the live mean renewed between steps).
 */
const WAYS = {
  old: () => {},
  'batch (a)': (d, initial) => {
    d.startStream();
    d.cmnType = initial.type;
    d.setCmnState(initial.cmn);
  },
  'live, cmn_live_set(initial mean) (b)': (d, initial) => {
    d.startStream();
    d.cmnType = CMN_LIVE;
    d.cmnLiveSet(initial.cmn.mean);
  },
  'live, exact initial state (b0)': (d, initial) => {
    d.startStream();
    d.cmnType = CMN_LIVE;
    d.setCmnState(initial.cmn);
  },
  voxd: (d) => d.startFresh(),
  // voxd's start with the initial mean weighted as 500 frames (the streamed guesses then settled on
  // a word the final pass changed, in test/engines/pocketsphinx/pocketsphinx.test.ts).
  'voxd, cmn_live_set(initial mean)': (d, initial) => {
    d.startFresh();
    d.cmnLiveSet(initial.cmn.mean);
  },
};
/** The ways that decode as voxd does (PsDecoder.startFresh, decodeWhole, feedPart). */
const asVoxd = (way) => way.startsWith('voxd');

/** For each voxd decode: whether the word-time map kept as many frames as the decoder searched. */
const mapChecks = [];

/**
 * A fresh decoder decoding `clipsInOrder` one way, after decoding `before` (not reported): the
 * word errors, the CPU time of each decode, and the answer in full (words, frames, posteriors).
 */
function run(way, clipsInOrder, streamed, opts, before = []) {
  const d = new PsDecoder(MODEL, opts);
  const initial = { type: d.cmnType, cmn: d.cmnState() };
  if (initial.type !== CMN_BATCH)
    throw new Error(`the model's feat.params asks for cmn type ${initial.type}`);
  const decode = (clip, inSteps) => {
    WAYS[way](d, initial);
    if (!asVoxd(way)) d.startUtt();
    const started = process.cpuUsage();
    if (!inSteps) {
      if (asVoxd(way)) d.decodeWhole(clip.pcm);
      else d.processRaw(clip.pcm, true);
    } else
      for (let at = 0; at < clip.pcm.length; at += STEP) {
        const step = clip.pcm.subarray(at, at + STEP);
        if (asVoxd(way)) d.feedPart(step);
        else d.processRaw(step, false);
      }
    d.endUtt();
    const used = process.cpuUsage(started);
    if (asVoxd(way)) {
      const { searched, mapped } = d.frameCounts();
      mapChecks.push(searched === mapped);
    }
    return { ms: (used.user + used.system) / 1000, hyp: d.hypothesis().split(' ').filter(Boolean) };
  };
  for (const b of before) decode(b.clip, b.streamed);
  const out = clipsInOrder.map((clip) => {
    const { ms, hyp } = decode(clip, streamed);
    return { clip, errors: errors(clip.words, hyp), ms, answer: JSON.stringify(d.segments()) };
  });
  d.dispose();
  return out;
}

const pct = (e, n) => `${((100 * e) / n).toFixed(1)} %`;

function table(title, rows) {
  const names = [...clips.map((c) => c.name), 'total (5 clips)', joined.name];
  const lines = [`| ${title} | ${names.join(' | ')} |`, `|---|${names.map(() => '---:').join('|')}|`];
  for (const [label, results] of rows) {
    const five = results.filter((r) => r.clip !== joined);
    const cells = five.map((r) => `${r.errors}/${r.clip.words.length}`);
    const e = five.reduce((s, r) => s + r.errors, 0);
    const n = five.reduce((s, r) => s + r.clip.words.length, 0);
    const j = results.find((r) => r.clip === joined);
    cells.push(`**${pct(e, n)}**`, j ? pct(j.errors, j.clip.words.length) : '');
    lines.push(`| ${label === 'voxd' ? '**voxd**' : label} | ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}

const all = [...clips, joined];
const sections = [];
sections.push(`pocketsphinx options: \`${options.join(' ')}\` (word errors / reference words)\n`);

const offline = Object.keys(WAYS).map((way) => [way, run(way, all, false, options)]);
// What the old code answered offline once its decoder had served a streamed request: the live mean
// of the streamed clips carried into each offline decode.
const oldAfter = (() => {
  const d = new PsDecoder(MODEL, options);
  const out = [];
  for (const clip of all) {
    d.startUtt();
    for (let at = 0; at < clip.pcm.length; at += STEP) d.processRaw(clip.pcm.subarray(at, at + STEP), false);
    d.endUtt();
  }
  for (const clip of all) {
    d.startUtt();
    d.processRaw(clip.pcm, true);
    d.endUtt();
    out.push({ clip, errors: errors(clip.words, d.hypothesis().split(' ').filter(Boolean)) });
  }
  d.dispose();
  return out;
})();
sections.push(
  table('offline', [...offline.slice(0, 1), ['old, after streamed requests', oldAfter], ...offline.slice(1)]),
);
const streamed = Object.keys(WAYS).map((way) => [way, run(way, all, true, options)]);
sections.push(table('streamed', streamed));

// History: each clip's answer (words, frames, posteriors) first on a fresh decoder, and after an
// offline decode of all five joined and the other clips streamed in reverse order.
function changed(way, streamed) {
  let n = 0;
  for (const clip of all) {
    const others = [...all].reverse().filter((c) => c !== clip);
    const before = [{ clip: joined, streamed: false }, ...others.map((c) => ({ clip: c, streamed: true }))];
    const fresh = run(way, [clip], streamed, options)[0].answer;
    if (run(way, [clip], streamed, options, before)[0].answer !== fresh) n++;
  }
  return `${n} of ${all.length}`;
}
sections.push(
  [
    '| answers (words, frames, posteriors) that change after other requests | offline | streamed |',
    '|---|---:|---:|',
    `| old | ${changed('old', false)} | ${changed('old', true)} |`,
    `| voxd | ${changed('voxd', false)} | ${changed('voxd', true)} |`,
  ].join('\n'),
);

// Offline decode CPU time: the median of REPEAT runs per clip (the ways interleaved, so that other load
// on the machine falls on each alike): the old code, and voxd's (fresh start, word-time map).
const timed = [
  ['old (nothing reset)', 'old', options],
  ['voxd (fresh start, word-time map)', 'voxd', options],
];
const times = timed.map(() => clips.map(() => []));
for (let r = 0; r < REPEAT; r++)
  for (const [t, [, way, opts]] of timed.entries())
    for (const [i, res] of run(way, clips, false, opts).entries()) times[t][i].push(res.ms);
const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const seconds = clips.reduce((s, c) => s + c.pcm.length / 16000, 0);
const timeLines = [
  `| offline decode, CPU time, median of ${REPEAT} | ${clips.map((c) => c.name).join(' | ')} | total | real-time factor |`,
  `|---|${clips.map(() => '---:').join('|')}|---:|---:|`,
];
timed.forEach(([label], t) => {
  const ms = times[t].map(median);
  const total = ms.reduce((s, x) => s + x, 0);
  timeLines.push(
    `| ${label} | ${ms.map((x) => `${x.toFixed(0)} ms`).join(' | ')} | ${total.toFixed(0)} ms | ${(total / 1000 / seconds).toFixed(3)} |`,
  );
});
sections.push(timeLines.join('\n'));
sections.push(
  `Word-time map: as many frames as the decoder searched in ${mapChecks.filter(Boolean).length} of ${mapChecks.length} voxd decodes.`,
);
process.stdout.write(`${sections.join('\n\n')}\n`);
