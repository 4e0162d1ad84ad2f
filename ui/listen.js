// The playground's listening form: transcribe an uploaded file.

import { $, act, api } from './api.js';

async function transcribe(event) {
  event.preventDefault();
  const form = new FormData();
  form.append('model', $('asr-model').value);
  form.append('file', $('asr-file').files[0]);
  const result = await (await api('POST', '/v1/audio/transcriptions', form)).json();
  $('asr-text').textContent = result.text ?? JSON.stringify(result);
}

export function startListen() {
  $('asr-form').addEventListener('submit', (e) => act(() => transcribe(e)));
}
