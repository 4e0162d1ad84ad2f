// The playground's listening form: an uploaded or recorded file, drawn as a waveform, then
// transcribed word by word (asr), split into speaker turns (diar) or into speech segments (vad).

import { $, act, api, getJson, postJson } from './api.js';
import { Recorder } from './recorder.js';
import { decodeAudio, drawWaveform, placePlayhead, placeSpan } from './waveform.js';
import { estimateWords, followPlayback, highlightWord, showWords } from './words.js';

const LISTEN_TASKS = ['asr', 'diar', 'vad'];
const ACTION_LABELS = { asr: 'Transcribe', diar: 'Find speakers', vad: 'Find speech' };
/** Colours are CSS classes speaker-0 .. speaker-7 (listen.css); more speakers reuse them. */
const SPEAKER_COLOURS = 8;
/** Segment positions come in samples; VAD answers at 16 kHz when no rate is given. */
const DEFAULT_RATE = 16000;

const audio = () => $('asr-audio');
/** The chosen audio: the File to send, its decoded samples (null if the page cannot decode it). */
const chosen = { file: null, buffer: null, url: null, generation: 0 };
let models = [];

export async function refreshModels() {
  // Alias entries (whisper-1, ...) repeat a model under another name: the page lists models once.
  models = ((await getJson('/v1/models')).data ?? []).filter((m) => !m.alias_of);
  const options = models
    .filter((m) => LISTEN_TASKS.includes(m.task))
    .map((m) => new Option(`${m.task}: ${m.family}`, m.id));
  $('asr-models').replaceChildren(...options);
  showAction();
}

/** The task of a model id; an id the page does not know is sent as a transcription, so the server names the problem. */
const taskOf = (id) => models.find((m) => m.id === id)?.task ?? 'asr';

function showAction() {
  const task = taskOf($('asr-model').value.trim());
  $('asr-submit').textContent = ACTION_LABELS[task] ?? ACTION_LABELS.asr;
}

/** Seconds the results are laid out over: the decoded audio's, else the player's, else `fallback`. */
function duration(fallback) {
  if (chosen.buffer) return chosen.buffer.duration;
  const d = audio().duration;
  return Number.isFinite(d) && d > 0 ? d : Math.max(fallback, 0.001);
}

function clearResults() {
  $('asr-overlay').replaceChildren();
  $('asr-legend').replaceChildren();
  $('asr-legend').hidden = true;
  $('asr-words').replaceChildren();
  $('asr-words').classList.remove('estimated');
  $('asr-status').textContent = '';
}

const seconds = (s) => `${s.toFixed(1)} s`;

/** Makes `file` the audio to send: plays it in the page and draws its waveform. */
async function useAudio(file, origin) {
  const generation = ++chosen.generation;
  chosen.file = file;
  chosen.buffer = null;
  if (chosen.url) URL.revokeObjectURL(chosen.url);
  chosen.url = URL.createObjectURL(file);
  audio().src = chosen.url;
  audio().hidden = false;
  clearResults();
  $('asr-view').hidden = false;
  const buffer = await decodeAudio(await file.arrayBuffer());
  // A file chosen meanwhile replaced this one.
  if (generation !== chosen.generation) return;
  chosen.buffer = buffer;
  drawWaveform($('asr-wave'), buffer);
  const length = buffer
    ? `, ${seconds(buffer.duration)}`
    : ' (this browser cannot draw it; the server may still read it)';
  $('asr-source').textContent = `${origin}: ${file.name}${length}`;
}

function upload(model, fields = {}) {
  const form = new FormData();
  form.append('model', model);
  for (const [key, value] of Object.entries(fields)) form.append(key, value);
  form.append('file', chosen.file, chosen.file.name);
  return form;
}

async function transcribe(model) {
  const form = upload(model, { response_format: 'verbose_json' });
  // Segments too: for an engine that times no words, its segments are the only times it gives.
  form.append('timestamp_granularities[]', 'word');
  form.append('timestamp_granularities[]', 'segment');
  const result = await (await api('POST', '/v1/audio/transcriptions', form)).json();
  const engineWords = result.words ?? [];
  const words = engineWords.length > 0 ? engineWords : estimateWords(result.segments ?? []);
  const box = $('asr-words');
  if (words.length === 0) {
    box.textContent = result.text ?? '';
    $('asr-status').textContent = result.text
      ? 'Transcript (this engine gives no times).'
      : 'No speech recognised.';
    return;
  }
  showWords(box, words, audio());
  const estimated = engineWords.length === 0;
  box.classList.toggle('estimated', estimated);
  $('asr-status').textContent = estimated
    ? `${words.length} words. This engine times sentences, not words: the word times are estimated.`
    : `${words.length} words, timed by the engine.`;
}

/** Labels as diarized_json gives them: A, B, ... then S27 on. */
const speakerLabel = (id) => (id < 26 ? String.fromCharCode(65 + id) : `S${id + 1}`);

function band(item, total, className) {
  const el = document.createElement('div');
  el.className = `band ${className}`;
  el.title = `${item.start.toFixed(2)}–${item.end.toFixed(2)} s`;
  el.dataset.start = String(item.start);
  el.dataset.end = String(item.end);
  placeSpan(el, item.start, item.end, total);
  return el;
}

function showLegend(turns) {
  const legend = $('asr-legend');
  const speakers = [...new Set(turns.map((t) => t.speaker_id))];
  for (const id of speakers) {
    const own = turns.filter((t) => t.speaker_id === id);
    const talk = own.reduce((s, t) => s + t.end - t.start, 0);
    const item = document.createElement('li');
    item.dataset.speaker = speakerLabel(id);
    const swatch = document.createElement('span');
    swatch.className = `swatch speaker-${id % SPEAKER_COLOURS}`;
    item.append(swatch, ` Speaker ${speakerLabel(id)}: ${own.length} turns, ${seconds(talk)}`);
    legend.append(item);
  }
  legend.hidden = speakers.length === 0;
}

async function findSpeakers(model) {
  const result = await (await api('POST', '/v1/audio/transcriptions', upload(model))).json();
  const rate = result.sample_rate ?? DEFAULT_RATE;
  const turns = (result.speaker_turns ?? []).map((t) => ({
    start: t.start_sample / rate,
    end: t.end_sample / rate,
    speaker_id: t.speaker_id,
  }));
  const total = duration(Math.max(0, ...turns.map((t) => t.end)));
  for (const turn of turns) {
    const el = band(turn, total, `turn speaker-${turn.speaker_id % SPEAKER_COLOURS}`);
    el.dataset.speaker = speakerLabel(turn.speaker_id);
    const label = document.createElement('span');
    label.textContent = el.dataset.speaker;
    el.append(label);
    $('asr-overlay').append(el);
  }
  showLegend(turns);
  const speakers = new Set(turns.map((t) => t.speaker_id)).size;
  $('asr-status').textContent = `${turns.length} turns, ${speakers} speaker${speakers === 1 ? '' : 's'}.`;
}

/** Base64 of bytes, a slice at a time: one String.fromCharCode call over megabytes overflows the stack. */
function toBase64(bytes) {
  const view = new Uint8Array(bytes);
  let binary = '';
  for (let i = 0; i < view.length; i += 0x8000) {
    binary += String.fromCharCode(...view.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

async function findSpeech(model) {
  const body = { model, audio_base64: toBase64(await chosen.file.arrayBuffer()) };
  const result = await postJson('/v1/tasks/run', body);
  const rate = result.sample_rate ?? DEFAULT_RATE;
  const segments = (result.segments ?? []).map((s) => ({
    start: s.start_sample / rate,
    end: s.end_sample / rate,
  }));
  const total = duration(Math.max(0, ...segments.map((s) => s.end)));
  for (const segment of segments) $('asr-overlay').append(band(segment, total, 'vad-segment'));
  const speech = segments.reduce((s, x) => s + x.end - x.start, 0);
  $('asr-status').textContent = `${segments.length} speech segments, ${seconds(speech)} of speech.`;
}

const RUNNERS = { asr: transcribe, diar: findSpeakers, vad: findSpeech };

async function run(event) {
  event.preventDefault();
  if (!chosen.file) throw new Error('choose an audio file or record one first');
  const model = $('asr-model').value.trim();
  // The list may have changed since the page loaded (a model registered meanwhile).
  await refreshModels().catch(() => undefined);
  const task = taskOf(model);
  clearResults();
  const submit = $('asr-submit');
  submit.disabled = true;
  $('asr-status').textContent = 'Working…';
  try {
    await (RUNNERS[task] ?? transcribe)(model);
  } catch (err) {
    $('asr-status').textContent = '';
    throw err;
  } finally {
    submit.disabled = false;
  }
}

function startRecorder() {
  const record = $('asr-record');
  const stop = $('asr-stop');
  const elapsed = $('asr-elapsed');
  const tick = (s) => {
    elapsed.value = seconds(s);
    elapsed.dataset.seconds = s.toFixed(2);
  };
  const recorder = new Recorder(tick, (file) => {
    record.disabled = false;
    stop.disabled = true;
    record.focus();
    $('asr-file').value = '';
    act(() => useAudio(file, 'Recording'));
  });
  record.addEventListener('click', () =>
    act(async () => {
      tick(0);
      await recorder.start();
      record.disabled = true;
      stop.disabled = false;
      stop.focus();
    }),
  );
  stop.addEventListener('click', () => recorder.stop());
}

function followAudio() {
  followPlayback(audio(), (time) => {
    highlightWord($('asr-words'), time);
    placePlayhead($('asr-playhead'), time, duration(time));
  });
}

export function startListen() {
  $('asr-form').addEventListener('submit', (e) => act(() => run(e)));
  $('asr-file').addEventListener('change', () => {
    const file = $('asr-file').files[0];
    if (file) act(() => useAudio(file, 'File'));
  });
  $('asr-model').addEventListener('input', showAction);
  $('asr-model').addEventListener('focus', () => refreshModels().catch(() => undefined));
  // Percent-placed bands follow a resize on their own; the canvas's pixels must be drawn again,
  // also when it comes back from a hidden tab, where it had no size.
  new ResizeObserver(() => {
    if ($('asr-wave').clientWidth > 0) drawWaveform($('asr-wave'), chosen.buffer);
  }).observe($('asr-wave'));
  startRecorder();
  followAudio();
}
