// Runs every compiled test file with Node's built-in test runner.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function collect(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return collect(path);
    return name.endsWith('.test.js') ? [path] : [];
  });
}

const files = collect('dist/test').sort();
const filter = process.argv.slice(2);
const selected = filter.length ? files.filter((f) => filter.some((part) => f.includes(part))) : files;
const reporter = process.env.CI ? ['--test-reporter=spec'] : [];
const result = spawnSync(process.execPath, ['--test', '--test-concurrency=2', ...reporter, ...selected], {
  stdio: 'inherit',
});
process.exit(result.status ?? 1);
