// Installs dependencies when missing or stale and compiles TypeScript, so that `npm start` and
// `npm test` work on a fresh machine with only Node and npm.
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
execSync('npx tsc -p tsconfig.json', { stdio: 'inherit' });
