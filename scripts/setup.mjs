// Everything `npm start` and `npm test` need on a fresh Debian machine with Node and npm: the npm
// dependencies (installed when missing or stale), the Debian packages of the embedded engines
// (installed as root when missing), and the compiled TypeScript.
import { execSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';

const stamp = 'node_modules/.package-lock.json';
const newest = Math.max(
  statSync('package.json').mtimeMs,
  existsSync('package-lock.json') ? statSync('package-lock.json').mtimeMs : 0,
);
const stale = !existsSync(stamp) || newest > statSync(stamp).mtimeMs;
if (stale) {
  const cmd = existsSync('package-lock.json') ? 'npm ci' : 'npm install';
  execSync(`${cmd} --no-audit --no-fund`, { stdio: 'inherit' });
}

// From Debian: pocketsphinx (the library and its en-us model), espeak-ng's data for Piper voices, ffmpeg,
// Festival and its HTS voice, and Chromium for the browser tests.
const DEBIAN_PACKAGES = {
  libpocketsphinx3: '/usr/lib/x86_64-linux-gnu/libpocketsphinx.so.3',
  'pocketsphinx-en-us': '/usr/share/pocketsphinx/model/en-us/en-us.lm.bin',
  // Piper voices phonemize with espeak-ng's data when their folder does not ship it.
  'espeak-ng-data': '/usr/lib/x86_64-linux-gnu/espeak-ng-data/phontab',
  // Audio formats other than WAV and PCM, in and out (mp3, opus, aac, flac, m4a, webm, ...).
  ffmpeg: '/usr/bin/ffmpeg',
  // The festival_tts engine and its one voice (HTS, US English, female).
  festival: '/usr/bin/festival',
  'festvox-us-slt-hts':
    '/usr/share/festival/voices/us/cmu_us_slt_arctic_hts/hts/cmu_us_slt_arctic_hts.htsvoice',
};
// Only `npm test` (--for-tests) needs these: a server is not made to carry a browser.
if (process.argv.includes('--for-tests')) {
  // Headless Chromium for the browser tests (test/browser, driven by playwright-core, which downloads
  // no browser of its own): about 20 s to install, 11 packages, about 410 MB on disk.
  DEBIAN_PACKAGES.chromium = '/usr/bin/chromium';
}
const missing = Object.entries(DEBIAN_PACKAGES)
  .filter(([, file]) => !existsSync(file))
  .map(([name]) => name);
if (missing.length > 0) {
  const root = process.getuid?.() === 0;
  const apt = existsSync('/usr/bin/apt-get');
  if (root && apt) {
    execSync('apt-get update', { stdio: 'inherit' });
    execSync(
      `DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing.join(' ')}`,
      { stdio: 'inherit' },
    );
  } else {
    console.warn(
      `voxd: the pocketsphinx model, the festival voice or formats other than WAV will be unavailable, and the browser tests will fail, until these Debian packages are installed: ${missing.join(' ')}`,
    );
  }
}

execSync('npx tsc -p tsconfig.json', { stdio: 'inherit' });
