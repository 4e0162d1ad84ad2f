// voxd's web UI: a live model table, the installer and a playground. Plain ES modules, no build.

import { $, act, bindApiKey, getJson } from './api.js';
import { startDashboard } from './dashboard.js';
import { startInstaller } from './installer.js';
import { startListen } from './listen.js';
import { startSpeech } from './speech.js';

function showTab(name) {
  for (const tab of document.querySelectorAll('[data-tab]')) {
    const on = tab.dataset.tab === name;
    tab.setAttribute('aria-pressed', String(on));
    $(tab.dataset.tab).hidden = !on;
  }
}

async function start() {
  bindApiKey($('api-key'));
  for (const tab of document.querySelectorAll('[data-tab]')) {
    tab.addEventListener('click', () => showTab(tab.dataset.tab));
  }
  startSpeech();
  startListen();
  const health = await getJson('/health');
  const management = health.ui_management === true;
  for (const el of document.querySelectorAll('.management')) el.hidden = !management;
  startDashboard(management);
  await startInstaller(management);
}

act(start);
