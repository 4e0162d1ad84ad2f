// The live model table (from the status stream) and, with ui_management, its controls.

import { $, act, apiKey, button, cell, getJson, labelCells, postJson } from './api.js';

let management = false;
/** The status stream now open (one at a time: a new key opens a new one). */
let source;
/** The model ids the table shows, so the register template names a new one. */
let shownIds = [];

/** The body that registers a model as it is now (GET /v1/ui/models/config), to send back edited. */
const configOf = (id) => getJson(`/v1/ui/models/config?id=${encodeURIComponent(id)}`);

const register = (body) => postJson('/v1/models/load', body);

/** Opens the editor with a registration body; Save sends it to POST /v1/models/load. */
function editConfig(title, body) {
  $('config-title').textContent = title;
  $('config-template-hint').hidden = true;
  $('config-json').value = JSON.stringify(body, null, 2);
  $('config-editor').hidden = false;
  $('config-json').focus();
}

async function saveConfig(event) {
  event.preventDefault();
  let body;
  try {
    body = JSON.parse($('config-json').value);
  } catch (err) {
    throw new Error(`the configuration is not valid JSON: ${err.message}`);
  }
  await register(body);
  $('config-editor').hidden = true;
}

/**
 * The table is redrawn on every status change; a slots value being edited, and the control that had
 * the focus, are carried over so that a request finishing does not undo what the user is typing.
 */
function renderModels(data) {
  const body = $('models');
  const edited = new Map(
    [...body.querySelectorAll('input[type=number]')].map((input) => [
      input.closest('tr').dataset.model,
      input.value,
    ]),
  );
  const focused = document.activeElement?.closest('#models tr')
    ? focusKey(document.activeElement)
    : undefined;
  body.replaceChildren();
  shownIds = data.map((m) => m.id);
  for (const m of data) {
    const row = body.insertRow();
    row.dataset.model = m.id;
    for (const value of [m.id, m.family, m.task, m.mode, m.state]) cell(row, value);
    cell(row, m.slots ?? '-');
    cell(row, m.active_slots ?? '-');
    cell(row, m.queued_requests ?? '-');
    cell(row, m.isolation);
    cell(row, m.last_error?.message ?? m.last_error ?? '');
    if (management) addActions(row, m, edited.get(m.id));
    labelCells(row);
  }
  if (focused)
    body.querySelector(`tr[data-model="${CSS.escape(focused.model)}"] ${focused.selector}`)?.focus();
}

/** Where a control sits in its row, to find its successor after a redraw. */
function focusKey(element) {
  const model = element.closest('tr').dataset.model;
  if (element.tagName === 'INPUT') return { model, selector: 'input' };
  const index = [...element.parentElement.querySelectorAll('button')].indexOf(element);
  return { model, selector: `button:nth-of-type(${index + 1})` };
}

function addActions(row, m, editedSlots) {
  const actions = cell(row, '');
  actions.append(
    button('Load', async () => register(await configOf(m.id))),
    button('Unload', () => postJson('/v1/models/unload', { id: m.id })),
    button('Configure', async () => editConfig(`Configure ${m.id}`, await configOf(m.id))),
  );
  if (m.slots !== undefined) {
    const label = document.createElement('label');
    const input = document.createElement('input');
    input.type = 'number';
    input.min = '1';
    input.value = editedSlots ?? String(m.slots);
    label.append('Slots ', input);
    actions.append(
      label,
      button('Apply', async () => register({ ...(await configOf(m.id)), slots: Number(input.value) })),
    );
  }
}

/**
 * A registration the server takes as it is: flite ships with voxd, so the entry needs no path. The
 * id is one no model has, so that saving it unchanged registers a model rather than reconfiguring one.
 */
function registerTemplate() {
  let id = 'my-voice';
  for (let n = 2; shownIds.includes(id); n++) id = `my-voice-${n}`;
  return { id, family: 'flite_tts', task: 'tts' };
}

/** Opens the status stream (closing the one before), with the API key the page has now. */
export function showModels(withManagement) {
  management = withManagement;
  source?.close();
  // An EventSource cannot send headers: the key goes in the query, which the server takes on this route only.
  const key = apiKey();
  const stream = new EventSource(
    key ? `/v1/ui/status/stream?api_key=${encodeURIComponent(key)}` : '/v1/ui/status/stream',
  );
  source = stream;
  $('stream-state').textContent = 'connecting…';
  stream.addEventListener('open', () => {
    $('stream-state').textContent = 'live';
  });
  stream.addEventListener('message', (event) => {
    if (event.data === '[DONE]') {
      stream.close();
      $('stream-state').textContent = 'server stopped';
      return;
    }
    renderModels(JSON.parse(event.data).data);
  });
  stream.addEventListener('error', () => {
    // A refused stream (a 401) is closed for good; a dropped one is retried by the browser.
    $('stream-state').textContent =
      stream.readyState === EventSource.CLOSED ? 'not connected: check the API key' : 'reconnecting…';
  });
}

/** Wires the controls once; the stream starts with showModels. */
export function startDashboard() {
  $('unload-all').addEventListener('click', () => act(() => postJson('/v1/tasks/unload_all_models', {})));
  $('add-model').addEventListener('click', () => {
    editConfig('Register a model', registerTemplate());
    $('config-template-hint').hidden = false;
  });
  $('config-form').addEventListener('submit', (e) => act(() => saveConfig(e)));
  $('config-cancel').addEventListener('click', () => {
    $('config-editor').hidden = true;
  });
}
