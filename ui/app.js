// voxd's web UI: a live model table, the installer and a small playground. Plain ES module, no build.

const $ = (id) => document.getElementById(id);
const KEY_STORE = 'voxd.apiKey';
let management = false;
/** The /v1/models entries with session options, by id: the body a load or slots change sends. */
let configs = new Map();

// --- HTTP -------------------------------------------------------------------------------------

function authHeaders(extra = {}) {
  const key = localStorage.getItem(KEY_STORE);
  return key ? { ...extra, Authorization: `Bearer ${key}` } : extra;
}

/** Shows the server's own error message (or clears it with no argument). */
function showError(message) {
  const box = $('error');
  box.textContent = message ?? '';
  box.hidden = !message;
}

/** Sends a request; throws an Error carrying the server's `error.message` on a failure status. */
async function api(method, path, body) {
  const init = { method, headers: authHeaders() };
  if (body instanceof FormData) init.body = body;
  else if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  if (!res.ok) {
    let message = `${res.status} ${res.statusText}`;
    try {
      message = (await res.json()).error?.message ?? message;
    } catch {
      // not JSON: the status line is all there is
    }
    throw new Error(message);
  }
  return res;
}

const getJson = async (path) => (await api('GET', path)).json();
const postJson = async (path, body) => (await api('POST', path, body)).json();

/** Runs an action from a button, showing any failure in the page. */
async function act(action) {
  showError();
  try {
    await action();
  } catch (err) {
    showError(err.message);
  }
}

function button(label, onClick) {
  const b = document.createElement('button');
  b.type = 'button';
  b.textContent = label;
  b.addEventListener('click', () => act(onClick));
  return b;
}

function cell(row, content) {
  const td = row.insertCell();
  if (content instanceof Node) td.append(content);
  else td.textContent = content ?? '';
  return td;
}

// --- dashboard --------------------------------------------------------------------------------

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

// --- installer --------------------------------------------------------------------------------

let jobTimer;

function formatBytes(n) {
  if (n === null || n === undefined) return '?';
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

async function loadPackages() {
  const sizes = await getJson('/v1/ui/models/package-sizes');
  const body = $('packages');
  body.replaceChildren();
  for (const p of sizes.data) {
    const row = body.insertRow();
    cell(row, p.id);
    cell(row, formatBytes(p.size_bytes));
    cell(row, p.installed ? 'installed' : p.state);
    const actions = cell(row, '');
    actions.append(
      button('Install', async () => {
        await postJson('/v1/ui/models/install', { id: p.id });
        watchJob(p.id);
      }),
      button('Clean partial', () => postJson('/v1/ui/models/clean-partial', { id: p.id })),
      button('Delete', async () => {
        await postJson('/v1/ui/models/delete', { id: p.id });
        await loadPackages();
      }),
    );
  }
  // The scan runs in the background: read again until it is done.
  if (sizes.state === 'running' || sizes.state === 'idle') setTimeout(() => act(loadPackages), 2000);
}

/** Polls one job once a second while it runs, showing its progress. */
function watchJob(id) {
  clearTimeout(jobTimer);
  $('job').hidden = false;
  $('job-stop').onclick = () => act(() => postJson('/v1/ui/models/install/stop', { id }));
  const poll = async () => {
    const job = await getJson(`/v1/ui/models/install-status?id=${encodeURIComponent(id)}`);
    $('job-text').textContent =
      `${job.id}: ${job.state} ${job.message ?? ''} (${formatBytes(job.downloaded_bytes)} of ${formatBytes(job.total_bytes)})`;
    const progress = $('job-progress');
    if (job.progress_percent >= 0) progress.value = job.progress_percent;
    else progress.removeAttribute('value');
    if (['queued', 'running', 'cancelling'].includes(job.state)) jobTimer = setTimeout(() => act(poll), 1000);
    else await loadPackages();
  };
  act(poll);
}

async function loadRoot() {
  const root = await getJson('/v1/ui/models-root');
  $('root-path').value = root.models_root;
}

async function browse(path) {
  const listing = await postJson('/v1/ui/browse-directories', { path });
  $('browser').hidden = false;
  $('browse-current').textContent = listing.current;
  const list = $('browse-list');
  list.replaceChildren();
  const entries = listing.parent
    ? [{ name: '..', path: listing.parent }, ...listing.directories]
    : listing.directories;
  for (const dir of entries) {
    const item = document.createElement('li');
    item.append(
      button(dir.name, () => browse(dir.path)),
      button('Use', async () => {
        $('root-path').value = dir.path;
      }),
    );
    list.append(item);
  }
}

// --- playground -------------------------------------------------------------------------------

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

// --- start ------------------------------------------------------------------------------------

function showTab(name) {
  for (const tab of document.querySelectorAll('[data-tab]')) {
    const on = tab.dataset.tab === name;
    tab.setAttribute('aria-pressed', String(on));
    $(tab.dataset.tab).hidden = !on;
  }
}

async function start() {
  const key = $('api-key');
  key.value = localStorage.getItem(KEY_STORE) ?? '';
  key.addEventListener('change', () => {
    if (key.value) localStorage.setItem(KEY_STORE, key.value);
    else localStorage.removeItem(KEY_STORE);
  });
  for (const tab of document.querySelectorAll('[data-tab]')) {
    tab.addEventListener('click', () => showTab(tab.dataset.tab));
  }
  $('speech-form').addEventListener('submit', (e) => act(() => speak(e)));
  $('asr-form').addEventListener('submit', (e) => act(() => transcribe(e)));
  $('unload-all').addEventListener('click', () => act(() => postJson('/v1/tasks/unload_all_models', {})));
  $('root-form').addEventListener('submit', (e) => {
    e.preventDefault();
    act(async () => {
      await postJson('/v1/ui/models-root', { path: $('root-path').value });
      await loadRoot();
      await loadPackages();
    });
  });
  $('browse').addEventListener('click', () => act(() => browse($('root-path').value)));

  const health = await getJson('/health');
  management = health.ui_management === true;
  for (const el of document.querySelectorAll('.management')) el.hidden = !management;
  $('installer-off').hidden = management;
  await refreshConfigs();
  watchModels();
  if (management) {
    await loadRoot();
    await loadPackages();
  }
}

act(start);
