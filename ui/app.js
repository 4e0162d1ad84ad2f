// voxd's web UI: a live model table, the installer and a playground. Plain ES modules, no build.

import { $, act, bindApiKey, getJson, showError } from './api.js';
import { showModels, startDashboard } from './dashboard.js';
import { loadInstaller, startInstaller } from './installer.js';
import { refreshModels as refreshListenModels, startListen } from './listen.js';
import { refreshLiveModels, startLive } from './live.js';
import { loadModels as loadSpeechModels, startSpeech } from './speech.js';

function showTab(name) {
  for (const tab of document.querySelectorAll('[data-tab]')) {
    const on = tab.dataset.tab === name;
    tab.setAttribute('aria-pressed', String(on));
    $(tab.dataset.tab).hidden = !on;
  }
}

/** Controls are wired once, whatever the server answers; what they show is loaded by `load`. */
function wire() {
  bindApiKey($('api-key'), () => act(load));
  for (const tab of document.querySelectorAll('[data-tab]')) {
    tab.addEventListener('click', () => showTab(tab.dataset.tab));
  }
  startSpeech();
  startListen();
  startLive();
  startDashboard();
  startInstaller();
}

/** Everything the page reads from the server: at start, and again with each new API key. */
async function load() {
  // The speech list's failure (a 401, say) shows in the banner; the listening list is a convenience
  // whose failure shows when its form is used.
  loadSpeechModels().catch((err) => showError(err.message));
  refreshListenModels().catch(() => undefined);
  refreshLiveModels().catch(() => undefined);
  const health = await getJson('/health');
  const management = health.ui_management === true;
  for (const el of document.querySelectorAll('.management')) el.hidden = !management;
  showModels(management);
  await loadInstaller(management);
}

wire();
act(load);
