// The live model table (from the status stream) and, with ui_management, its controls.

import { $, act, button, cell, getJson, postJson } from './api.js';

let management = false;
/** The /v1/models entries with session options, by id: the body a load or slots change sends. */
let configs = new Map();

async function refreshConfigs() {
  if (!management) return;
  const list = await getJson('/v1/models?include_session_options=true');
  configs = new Map(list.data.map((m) => [m.id, m]));
}

/** The body of POST /v1/models/load for a listed model, with `slots` when given. */
function loadBody(id, slots) {
  const m = configs.get(id);
  if (!m) throw new Error(`no configuration known for ${id}`);
  const body = { id: m.id, family: m.family, path: m.path, task: m.task, mode: m.mode };
  if (m.session_options) body.session_options = m.session_options;
  const n = slots ?? m.slots;
  if (n !== undefined) body.slots = n;
  return body;
}

function renderModels(data) {
  const body = $('models');
  body.replaceChildren();
  for (const m of data) {
    const row = body.insertRow();
    row.dataset.model = m.id;
    for (const value of [m.id, m.family, m.task, m.mode, m.state]) cell(row, value);
    cell(row, m.slots ?? '-');
    cell(row, m.active_slots ?? '-');
    cell(row, m.queued_requests ?? '-');
    cell(row, m.isolation);
    cell(row, m.last_error?.message ?? m.last_error ?? '');
    if (!management) continue;
    const actions = cell(row, '');
    actions.append(
      button('Load', () => postJson('/v1/models/load', loadBody(m.id))),
      button('Unload', () => postJson('/v1/models/unload', { id: m.id })),
    );
    if (m.slots !== undefined) {
      const label = document.createElement('label');
      const input = document.createElement('input');
      input.type = 'number';
      input.min = '1';
      input.value = String(m.slots);
      label.append('Slots ', input);
      actions.append(
        label,
        button('Apply', () => postJson('/v1/models/load', loadBody(m.id, Number(input.value)))),
      );
    }
  }
}

function watchModels() {
  const source = new EventSource('/v1/ui/status/stream');
  source.addEventListener('open', () => {
    $('stream-state').textContent = 'live';
  });
  source.addEventListener('message', (event) => {
    if (event.data === '[DONE]') {
      source.close();
      $('stream-state').textContent = 'server stopped';
      return;
    }
    const list = JSON.parse(event.data);
    const known = list.data.every((m) => configs.has(m.id));
    (known ? Promise.resolve() : refreshConfigs().catch(() => {})).then(() => renderModels(list.data));
  });
  source.addEventListener('error', () => {
    $('stream-state').textContent = 'reconnecting…';
  });
}

export async function startDashboard(withManagement) {
  management = withManagement;
  $('unload-all').addEventListener('click', () => act(() => postJson('/v1/tasks/unload_all_models', {})));
  await refreshConfigs();
  watchModels();
}
