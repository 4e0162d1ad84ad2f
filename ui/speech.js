// The playground's speech form: speak a text, play it in the page, download it.

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

export function startSpeech() {
  $('speech-form').addEventListener('submit', (e) => act(() => speak(e)));
}
