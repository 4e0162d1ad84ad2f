// The Live tab: the microphone streamed to /v1/realtime (OpenAI's Realtime API, transcription
// session) with the server finding the turns (server VAD). Words show as they arrive while the
// user speaks; each finished turn becomes one line. The API key travels as the browser subprotocol
// `openai-insecure-api-key.<key>` (a page cannot set headers on a WebSocket).

import { $, apiKey, getJson } from './api.js';

const TASKS = ['asr', 'diar'];
/** A turn's line: its item id, and how many words came before its speech stopped. */
const turns = new Map();
let live = null;

export async function refreshLiveModels() {
  const models = ((await getJson('/v1/models')).data ?? []).filter(
    (m) => !m.alias_of && TASKS.includes(m.task),
  );
  $('live-models').replaceChildren(...models.map((m) => new Option(`${m.task}: ${m.family}`, m.id)));
}

export function startLive() {
  $('live-start').addEventListener('click', () => {
    start().catch((err) => {
      stop();
      status('stopped', err.message);
    });
  });
  $('live-stop').addEventListener('click', () => {
    stop();
    status('stopped', 'Stopped.');
  });
}

function status(state, text) {
  $('live-status').dataset.state = state;
  $('live-status').textContent = text;
  $('live-start').disabled = state !== 'stopped';
  $('live-stop').disabled = state === 'stopped';
}

async function start() {
  const model = $('live-model').value.trim();
  if (!model) throw new Error('choose a model first');
  if (!navigator.mediaDevices?.getUserMedia) {
    throw new Error('this browser gives the page no microphone (it needs https or localhost)');
  }
  status('starting', 'Opening the microphone…');
  const stream = await navigator.mediaDevices.getUserMedia({
    audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true },
  });
  const context = new AudioContext();
  live = { stream, context, ws: null };
  await context.audioWorklet.addModule('/ui/live-capture.js');
  const tap = new AudioWorkletNode(context, 'voxd-capture');
  context.createMediaStreamSource(stream).connect(tap);

  const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
  const key = apiKey();
  const ws = new WebSocket(
    `${scheme}://${location.host}/v1/realtime?model=${encodeURIComponent(model)}`,
    key ? ['realtime', `openai-insecure-api-key.${key}`] : ['realtime'],
  );
  live.ws = ws;
  ws.addEventListener('open', () => {
    ws.send(
      JSON.stringify({
        type: 'session.update',
        session: {
          type: 'transcription',
          audio: {
            // voxd takes PCM at any rate: the context's own, so the page never resamples.
            input: {
              format: { type: 'audio/pcm', rate: context.sampleRate },
              turn_detection: { type: 'server_vad' },
            },
          },
        },
      }),
    );
    status('listening', 'Listening…');
    tap.port.onmessage = (e) => {
      if (ws.readyState === WebSocket.OPEN)
        ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: pcm16(e.data) }));
    };
  });
  ws.addEventListener('message', (e) => handle(JSON.parse(e.data)));
  ws.addEventListener('close', (e) => {
    if (live?.ws !== ws) return;
    stop();
    // A refused upgrade tells the page nothing more than that it closed (1006).
    status(
      'stopped',
      e.code === 1006
        ? `Could not open a session on ${model} (unknown model, or a key it refused?).`
        : `Session closed (${e.code} ${e.reason}).`,
    );
  });
}

function stop() {
  const current = live;
  live = null;
  if (!current) return;
  for (const track of current.stream.getTracks()) track.stop();
  current.context.close().catch(() => undefined);
  current.ws?.close(1000);
}

/** The line of a turn, made when its speech starts (or at its first event). */
function line(item) {
  let turn = turns.get(item);
  if (!turn) {
    const li = document.createElement('li');
    li.dataset.item = item;
    li.dataset.state = 'speaking';
    li.dataset.early = '0';
    $('live-turns').append(li);
    turn = { li, stopped: false };
    turns.set(item, turn);
  }
  return turn;
}

function handle(event) {
  switch (event.type) {
    case 'input_audio_buffer.speech_started':
      line(event.item_id);
      status('speaking', 'Speaking…');
      return;
    case 'input_audio_buffer.speech_stopped':
      line(event.item_id).stopped = true;
      line(event.item_id).li.dataset.state = 'transcribing';
      status('listening', 'Listening…');
      return;
    case 'conversation.item.input_audio_transcription.delta': {
      const turn = line(event.item_id);
      turn.li.textContent += event.delta;
      if (!turn.stopped) turn.li.dataset.early = String(Number(turn.li.dataset.early) + 1);
      return;
    }
    case 'conversation.item.input_audio_transcription.completed': {
      const { li } = line(event.item_id);
      li.textContent = event.transcript.trim() || '(nothing heard)';
      li.dataset.state = 'final';
      return;
    }
    case 'conversation.item.input_audio_transcription.failed': {
      const { li } = line(event.item_id);
      li.textContent = `failed: ${event.error.message}`;
      li.dataset.state = 'failed';
      return;
    }
    case 'error':
      $('live-error').textContent = event.error.message;
      return;
  }
}

/** Float samples as base64 little-endian PCM16. */
function pcm16(samples) {
  const bytes = new Uint8Array(samples.length * 2);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < samples.length; i++) {
    view.setInt16(i * 2, Math.round(Math.max(-1, Math.min(1, samples[i])) * 32767), true);
  }
  let text = '';
  for (let i = 0; i < bytes.length; i += 0x8000)
    text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
}
