// The playground's speech form: pick a model, voice, speed and format, speak a text, play it in the
// page and download it; or stream it and play each chunk as it arrives.

import { $, act, authHeaders, errorMessage, getJson, showError } from './api.js';
import { PcmPlayer } from './pcm-player.js';
import { sseEvents } from './sse.js';

/** The tasks /v1/audio/speech serves (SPEECH_TASKS in src/http/input-text.ts). */
const SPEECH_TASKS = ['tts', 'clon', 'vdes'];

/**
 * A stream does not say its sample rate, so the page asks for one: 24 kHz mono, OpenAI's pcm.
 * (The server resamples a stream only from a mono model; a stereo one answers with a 400 that says so.)
 */
const STREAM_RATE = 24000;

/** Each format's file extension and the MIME type an <audio> element is asked about (none: download only). */
const FORMATS = {
  wav: { ext: 'wav', type: 'audio/wav' },
  mp3: { ext: 'mp3', type: 'audio/mpeg' },
  opus: { ext: 'opus', type: 'audio/ogg; codecs=opus' },
  aac: { ext: 'aac', type: 'audio/aac' },
  flac: { ext: 'flac', type: 'audio/flac' },
  pcm: { ext: 'pcm', type: null },
};

/** The speech models of /v1/models, by id. */
let models = new Map();
/** The object URL behind the audio element and the download link. */
let resultUrl;
/** The stream in progress: its player and the controller that cancels its request. */
let streaming;
/** Counts model changes, so a slow voice list for a model no longer selected is dropped. */
let voiceRequest = 0;

function setStatus(state, text) {
  const status = $('speech-status');
  status.dataset.state = state;
  status.textContent = text;
}

/** The model list (and the chosen model's voices), read again when the playground opens or the key changes. */
export async function loadModels() {
  const list = await getJson('/v1/models');
  // Alias entries (tts-1, ...) repeat a model under another name: the page lists models once.
  const speech = list.data.filter((m) => SPEECH_TASKS.includes(m.task) && !m.alias_of);
  models = new Map(speech.map((m) => [m.id, m]));
  const select = $('speech-model');
  const kept = select.value;
  const options = speech.map((m) => new Option(modelLabel(m), m.id));
  if (options.length === 0) options.push(new Option('(no speech models)', ''));
  select.replaceChildren(...options);
  if (models.has(kept)) select.value = kept;
  await modelChanged();
}

const modelLabel = (m) => `${m.id} (${m.family}${m.mode === 'streaming' ? ', streaming' : ''})`;

async function modelChanged() {
  const model = models.get($('speech-model').value);
  const stream = $('speech-stream');
  stream.disabled = model?.mode !== 'streaming';
  if (stream.disabled) stream.checked = false;
  streamChanged();
  await loadVoices(model?.id);
}

/** A stream is PCM played as it comes (and a WAV afterwards), so the format does not apply. */
function streamChanged() {
  $('speech-format').disabled = $('speech-stream').checked;
}

async function loadVoices(modelId) {
  const request = ++voiceRequest;
  const select = $('speech-voice');
  const fallback = new Option('(model default)', '');
  if (!modelId) return select.replaceChildren(fallback);
  const { voices, aliases = {} } = await getJson(`/v1/audio/voices?model=${encodeURIComponent(modelId)}`);
  if (request !== voiceRequest) return;
  const kept = select.value;
  select.replaceChildren(fallback, ...voiceGroups(voices, aliases));
  // A refresh of the same model's list keeps the choice; another model's list lacks it anyway.
  if ([...select.options].some((o) => o.value === kept)) select.value = kept;
}

/** The model's own voices (what the aliases speak in, voice_dir files, presets), then the aliases. */
function voiceGroups(voices, aliases) {
  const engine = Object.values(aliases).filter((v) => v !== null);
  const own = [...new Set([...engine, ...voices.filter((v) => !(v in aliases))])].sort();
  const groups = [];
  if (own.length > 0)
    groups.push(
      optgroup(
        'Voices',
        own.map((v) => new Option(v, v)),
      ),
    );
  const names = Object.keys(aliases).sort();
  if (names.length > 0) {
    const label = (name) => `${name} → ${aliases[name] ?? 'default voice'}`;
    groups.push(
      optgroup(
        'OpenAI names',
        names.map((n) => new Option(label(n), n)),
      ),
    );
  }
  return groups;
}

function optgroup(label, options) {
  const group = document.createElement('optgroup');
  group.label = label;
  group.append(...options);
  return group;
}

/** The fields every request sends; speed only when it differs from 1, which every model accepts. */
function requestBody() {
  const body = { model: $('speech-model').value, input: $('speech-text').value };
  const voice = $('speech-voice').value;
  if (voice) body.voice = voice;
  const speed = $('speech-speed').valueAsNumber;
  if (Number.isFinite(speed) && speed !== 1) body.speed = speed;
  return body;
}

/** Shows `blob` in the audio element (when the browser plays its type) and as a download. */
function showResult(blob, format) {
  if (resultUrl) URL.revokeObjectURL(resultUrl);
  resultUrl = URL.createObjectURL(blob);
  const { ext, type } = FORMATS[format];
  const audio = $('speech-audio');
  const playable = type !== null && audio.canPlayType(type) !== '';
  audio.hidden = !playable;
  if (playable) audio.src = resultUrl;
  else audio.removeAttribute('src');
  const link = document.createElement('a');
  link.href = resultUrl;
  link.download = `speech.${ext}`;
  link.textContent = `Download speech.${ext}`;
  $('speech-download').replaceChildren(link);
  return playable;
}

function clearResult() {
  const audio = $('speech-audio');
  audio.pause();
  audio.hidden = true;
  $('speech-download').replaceChildren();
}

async function speakWhole(body) {
  const format = $('speech-format').value;
  body.response_format = format;
  // Raw PCM carries no rate, so it is asked for at a rate the page can name.
  if (format === 'pcm') body.sample_rate = STREAM_RATE;
  setStatus('working', 'Speaking…');
  const res = await post(body);
  const playable = showResult(await res.blob(), format);
  const note =
    format === 'pcm' ? `raw PCM16, ${STREAM_RATE} Hz, mono` : playable ? '' : 'this browser cannot play it';
  setStatus('done', `Done${note ? `: ${note}` : ''}.`);
}

async function post(body, signal) {
  const res = await fetch('/v1/audio/speech', {
    method: 'POST',
    headers: authHeaders({ 'Content-Type': 'application/json' }),
    body: JSON.stringify(body),
    signal,
  });
  if (!res.ok) throw new Error(await errorMessage(res));
  return res;
}

function base64Bytes(text) {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function streamProgress(run) {
  const status = $('speech-status');
  status.dataset.chunks = String(run.player.scheduled);
  status.dataset.played = String(run.player.played);
  if (run.firstMs === undefined || run.state !== 'playing') return;
  setStatus(
    'playing',
    `Playing from the first chunk after ${run.firstMs} ms (${run.player.scheduled} so far)…`,
  );
}

/** Streams the speech and plays each PCM chunk the moment it arrives. */
async function speakStreamed(body) {
  // Made before any await, in the click's user activation, so autoplay rules let it sound.
  const run = { controller: new AbortController(), state: 'playing', firstMs: undefined };
  run.player = new PcmPlayer(STREAM_RATE, 1, () => streaming === run && streamProgress(run));
  streaming = run;
  $('speech-stop').hidden = false;
  setStatus('working', 'Waiting for the first chunk…');
  const sent = performance.now();
  try {
    const res = await post(
      { ...body, stream: true, response_format: 'pcm', sample_rate: STREAM_RATE },
      run.controller.signal,
    );
    for await (const event of sseEvents(res, run.controller.signal)) {
      if (event.type === 'error') throw new Error(event.error?.message ?? 'the stream failed');
      if (event.type !== 'speech.audio.delta') continue;
      run.player.push(base64Bytes(event.audio));
      run.firstMs ??= Math.round(performance.now() - sent);
      streamProgress(run);
    }
  } catch (err) {
    if (run.controller.signal.aborted) return;
    run.state = 'failed';
    throw err;
  } finally {
    if (streaming === run) $('speech-stop').hidden = true;
  }
  if (run.controller.signal.aborted) return;
  streamDone(run);
}

function streamDone(run) {
  run.state = 'done';
  const seconds = (run.player.chunks.reduce((n, c) => n + c.length, 0) / STREAM_RATE).toFixed(2);
  showResult(run.player.wav(), 'wav');
  setStatus(
    'done',
    `Played from the first chunk after ${run.firstMs} ms; ${run.player.scheduled} chunks, ${seconds} s in all.`,
  );
}

function stopStream() {
  if (!streaming) return;
  streaming.controller.abort();
  streaming.player.stop();
  streaming = undefined;
  $('speech-stop').hidden = true;
}

async function speak(event) {
  event.preventDefault();
  stopStream();
  clearResult();
  // The chunk counts belong to one stream; none shows until the next stream has some.
  delete $('speech-status').dataset.chunks;
  delete $('speech-status').dataset.played;
  try {
    if ($('speech-stream').checked) await speakStreamed(requestBody());
    else await speakWhole(requestBody());
  } catch (err) {
    setStatus('failed', 'Failed (see the message above).');
    throw err;
  }
}

export function startSpeech() {
  $('speech-form').addEventListener('submit', (e) => act(() => speak(e)));
  $('speech-model').addEventListener('change', () => act(modelChanged));
  $('speech-stream').addEventListener('change', streamChanged);
  $('speech-stop').addEventListener('click', () => {
    stopStream();
    setStatus('stopped', 'Stopped.');
  });
  // The list follows models registered since the page loaded, each time the playground opens.
  const refresh = () => loadModels().catch((err) => showError(err.message));
  document.querySelector('[data-tab="playground"]')?.addEventListener('click', refresh);
}
