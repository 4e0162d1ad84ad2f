// The playground: speak a text, transcribe a file.

import { $, act, api } from './api.js';

let speechUrl;

async function speak(event) {
  event.preventDefault();
  const res = await api('POST', '/v1/audio/speech', {
    model: $('speech-model').value,
    input: $('speech-text').value,
    response_format: 'wav',
  });
  if (speechUrl) URL.revokeObjectURL(speechUrl);
  speechUrl = URL.createObjectURL(await res.blob());
  const audio = $('speech-audio');
  audio.src = speechUrl;
  audio.hidden = false;
  const link = document.createElement('a');
  link.href = speechUrl;
  link.download = 'speech.wav';
  link.textContent = 'Download';
  $('speech-download').replaceChildren(link);
}

async function transcribe(event) {
  event.preventDefault();
  const form = new FormData();
  form.append('model', $('asr-model').value);
  form.append('file', $('asr-file').files[0]);
  const result = await (await api('POST', '/v1/audio/transcriptions', form)).json();
  $('asr-text').textContent = result.text ?? JSON.stringify(result);
}

export function startPlayground() {
  $('speech-form').addEventListener('submit', (e) => act(() => speak(e)));
  $('asr-form').addEventListener('submit', (e) => act(() => transcribe(e)));
}
