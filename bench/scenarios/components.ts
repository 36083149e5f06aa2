/** The relay's per-record steps timed alone (bench/components.ts), in a process of its own: its steps print EMF and log lines. */
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../testkit/synth';
import { type ComponentCost, RESULT_MARKER } from '../components';
import { log, runNode } from '../harness';
import { scenario } from './scenario';

export default scenario('components', async () => {
  log('components: per-record steps timed alone');
  const env = { PATH: process.env.PATH, POWERTOOLS_LOG_LEVEL: 'INFO', AWS_LAMBDA_FUNCTION_NAME: 'bench' };
  const { out } = await runNode(['--import', 'tsx', join(PROJECT_ROOT, 'bench', 'components.ts')], env, PROJECT_ROOT, 120_000);
  const line = out.split('\n').find((candidate) => candidate.startsWith(RESULT_MARKER));
  if (line === undefined) throw new Error('components printed no result line');
  return JSON.parse(line.slice(RESULT_MARKER.length)) as ComponentCost[];
});
