// The installer panel (ui_management only): packages with sizes, install with progress, stop,
// clean partial, delete, and the models root with a folder browser.

import { $, act, button, cell, getJson, labelCells, postJson } from './api.js';

let jobTimer;

/** A size the hub or the catalogue does not give reads "unknown". */
function formatBytes(n) {
  if (n === null || n === undefined) return 'unknown';
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
    row.dataset.package = p.id;
    for (const value of [p.id, p.family, p.task, formatBytes(p.size_bytes)]) cell(row, value);
    cell(row, p.installed ? 'installed' : 'not installed');
    const actions = cell(row, '');
    if (p.installed) {
      actions.append(
        // Registered under the package's id, as a request naming it would: it joins the model table.
        button('Load', () => postJson('/v1/models/load', { id: p.id, package: p.id })),
        button('Delete', async () => {
          await postJson('/v1/ui/models/delete', { id: p.id });
          await loadPackages();
        }),
      );
    } else {
      actions.append(
        button('Install', async () => {
          await postJson('/v1/ui/models/install', { id: p.id });
          watchJob(p.id);
        }),
      );
    }
    labelCells(row);
  }
  // The scan runs in the background: read again until it is done.
  if (sizes.state === 'running' || sizes.state === 'idle') setTimeout(() => act(loadPackages), 2000);
}

const ACTIVE = ['queued', 'running', 'cancelling'];

/**
 * One line about a job: its message says the step and how it ended ("download failed: could not
 * reach ..."), so the state is not said again; the sizes only while it runs.
 */
function jobText(job) {
  const text = `${job.id}: ${job.message}`;
  if (job.state !== 'running') return text;
  const total = job.progress_percent >= 0 ? formatBytes(job.total_bytes) : 'unknown';
  return `${text} (${formatBytes(job.downloaded_bytes)} of ${total})`;
}

/** Polls one job once a second while it runs, showing its progress. */
function watchJob(id) {
  clearTimeout(jobTimer);
  $('job').hidden = false;
  $('job-stop').hidden = false;
  $('job-clean').hidden = true;
  $('job-stop').onclick = () => act(() => postJson('/v1/ui/models/install/stop', { id }));
  $('job-clean').onclick = () =>
    act(async () => {
      await postJson('/v1/ui/models/clean-partial', { id });
      $('job').hidden = true;
    });
  const poll = async () => {
    const job = await getJson(`/v1/ui/models/install-status?id=${encodeURIComponent(id)}`);
    const running = ACTIVE.includes(job.state);
    $('job-text').textContent = jobText(job);
    const progress = $('job-progress');
    // An ended job's bar stands still: a bar without a value is the browser's endless animation.
    if (job.progress_percent >= 0) progress.value = job.progress_percent;
    else if (running) progress.removeAttribute('value');
    else progress.value = 0;
    $('job').dataset.state = job.state;
    if (running) {
      jobTimer = setTimeout(() => act(poll), 1000);
      return;
    }
    // Ended: a stopped or failed download may have left partial files to clean.
    $('job-stop').hidden = true;
    $('job-clean').hidden = !job.partial_files;
    await loadPackages();
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

/** Wires the panel's controls once; what it shows is read by loadInstaller. */
export function startInstaller() {
  $('root-form').addEventListener('submit', (e) => {
    e.preventDefault();
    act(async () => {
      await postJson('/v1/ui/models-root', { path: $('root-path').value });
      await loadRoot();
      await loadPackages();
    });
  });
  $('browse').addEventListener('click', () => act(() => browse($('root-path').value)));
}

export async function loadInstaller(management) {
  $('installer-off').hidden = management;
  if (!management) return;
  await loadRoot();
  await loadPackages();
}
