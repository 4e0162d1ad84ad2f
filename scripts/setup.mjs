// Everything `npm start` and `npm test` need on a fresh Debian machine with Node and npm: the npm
// dependencies (installed when missing or stale), the Debian packages of the embedded engines
// (installed as root when missing), and the compiled TypeScript.
import { execSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { RUNTIME_PACKAGES, TEST_PACKAGES } from './debian-packages.mjs';

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

// From Debian: the engines' packages, plus Chromium and nginx for the tests (scripts/debian-packages.mjs).
const DEBIAN_PACKAGES = {
  ...RUNTIME_PACKAGES,
  ...(process.argv.includes('--for-tests') ? TEST_PACKAGES : {}),
};
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
      `voxd: the pocketsphinx model, the festival voice or formats other than WAV will be unavailable, and the browser and scale-out tests will fail, until these Debian packages are installed: ${missing.join(' ')}`,
    );
  }
}

execSync('npx tsc -p tsconfig.json', { stdio: 'inherit' });
