// What every part of the page shares: requests with the API key, the error box, small DOM helpers.

export const $ = (id) => document.getElementById(id);
const KEY_STORE = 'voxd.apiKey';

/** A pause in typing this long tries the key; Enter or leaving the field tries it at once. */
const KEY_PAUSE_MS = 400;

export const apiKey = () => localStorage.getItem(KEY_STORE);

/**
 * Keeps the key field and the stored key in step, and calls `onChange` as soon as a new key is in,
 * so that what failed without it is asked again (a reload would lose what the page holds).
 */
export function bindApiKey(input, onChange) {
  input.value = apiKey() ?? '';
  let pause;
  const apply = () => {
    clearTimeout(pause);
    const key = input.value.trim();
    if (key === (apiKey() ?? '')) return;
    if (key) localStorage.setItem(KEY_STORE, key);
    else localStorage.removeItem(KEY_STORE);
    input.removeAttribute('aria-invalid');
    onChange();
  };
  input.addEventListener('input', () => {
    clearTimeout(pause);
    pause = setTimeout(apply, KEY_PAUSE_MS);
  });
  input.addEventListener('change', apply);
}

export function authHeaders(extra = {}) {
  const key = apiKey();
  return key ? { ...extra, Authorization: `Bearer ${key}` } : extra;
}

/** Shows the server's own error message (or clears it with no argument). */
export function showError(message) {
  const box = $('error');
  box.textContent = message ?? '';
  box.hidden = !message;
}

/**
 * A 401 told to the person at the page: the server's message names the Authorization header, which
 * is for programs; here the key goes into the page's own field.
 */
const KEY_MESSAGES = {
  missing_api_key: 'This server needs an API key: type it into the "API key" field at the top of the page.',
  invalid_api_key:
    'The API key is not valid on this server: type a valid key into the "API key" field at the top of the page.',
};

/** The server's `error.message` of a failed response (a missing or wrong key: where to type it), else its status line. */
export async function errorMessage(res) {
  let error;
  try {
    error = (await res.json()).error;
  } catch {
    error = undefined;
  }
  if (res.status === 401) {
    $('api-key')?.setAttribute('aria-invalid', 'true');
    return KEY_MESSAGES[error?.code] ?? KEY_MESSAGES.missing_api_key;
  }
  return error?.message ?? `${res.status} ${res.statusText}`;
}

/** Sends a request; throws an Error carrying the server's `error.message` on a failure status. */
export async function api(method, path, body) {
  const init = { method, headers: authHeaders() };
  if (body instanceof FormData) init.body = body;
  else if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  if (!res.ok) throw new Error(await errorMessage(res));
  return res;
}

export const getJson = async (path) => (await api('GET', path)).json();
export const postJson = async (path, body) => (await api('POST', path, body)).json();

/** Runs an action from a button, showing any failure in the page. */
export async function act(action) {
  showError();
  try {
    await action();
  } catch (err) {
    showError(err.message);
  }
}

export function button(label, onClick) {
  const b = document.createElement('button');
  b.type = 'button';
  b.textContent = label;
  b.addEventListener('click', () => act(onClick));
  return b;
}

export function cell(row, content) {
  const td = row.insertCell();
  if (content instanceof Node) td.append(content);
  else td.textContent = content ?? '';
  return td;
}

/** Names each cell of a row after its column, so a phone-width screen can show the row as a card. */
export function labelCells(row) {
  const headers = row.closest('table').tHead.rows[0].cells;
  for (const [i, td] of [...row.cells].entries()) td.dataset.label = headers[i]?.textContent ?? '';
}
