/**
 * Regenerates the settings tables of docs/configuration.md from the registry
 * (`lambda/settings.ts`): `npx tsx bin/docs.ts`. `--check` exits 1 when the file is stale.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { withSettingsTables } from '../lib/configuration-docs';

const file = join(resolve(dirname(fileURLToPath(import.meta.url)), '..'), 'docs', 'configuration.md');
const current = readFileSync(file, 'utf8');
const next = withSettingsTables(current);
if (process.argv.includes('--check')) {
  if (next !== current) {
    console.error('docs/configuration.md is stale: run npx tsx bin/docs.ts');
    process.exitCode = 1;
  }
} else if (next !== current) {
  writeFileSync(file, next);
  console.log('docs/configuration.md: settings tables rewritten');
}
