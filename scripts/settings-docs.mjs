#!/usr/bin/env node
/**
 * Writes docs/configuration.md's settings tables from the settings table (src/config/settings.ts),
 * read from the build: `npx tsc -p tsconfig.json && node scripts/settings-docs.mjs --write`.
 * Without --write it only checks, and exits 1 when the doc differs from what it would write.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { writeSettingsDoc } from '../dist/src/config/settings-docs.js';

const docPath = new URL('../docs/configuration.md', import.meta.url);
const doc = readFileSync(docPath, 'utf8');
const written = writeSettingsDoc(doc);
if (process.argv.includes('--write')) {
  if (written !== doc) writeFileSync(docPath, written);
  console.log(written === doc ? 'docs/configuration.md is up to date' : 'docs/configuration.md rewritten');
} else if (written !== doc) {
  console.error(
    'docs/configuration.md differs from the settings table; run node scripts/settings-docs.mjs --write',
  );
  process.exit(1);
}
