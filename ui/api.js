// What every part of the page shares: requests with the API key, the error box, small DOM helpers.

export const $ = (id) => document.getElementById(id);
const KEY_STORE = 'voxd.apiKey';

export const apiKey = () => localStorage.getItem(KEY_STORE);

/** Keeps the key field and the stored key in step. */
export function bindApiKey(input) {
  input.value = apiKey() ?? '';
  input.addEventListener('change', () => {
    if (input.value) localStorage.setItem(KEY_STORE, input.value);
    else localStorage.removeItem(KEY_STORE);
  });
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

/** The server's `error.message` of a failed response, else its status line. */
export async function errorMessage(res) {
  try {
    return (await res.json()).error?.message ?? `${res.status} ${res.statusText}`;
  } catch {
    return `${res.status} ${res.statusText}`;
  }
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
