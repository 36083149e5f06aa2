/** Peak RSS of one big batch, each side in a fresh process with no heap limits. */
import { BARE, BATCH, DEADLINE_MS, eventFile, log, NOOP, PEER, RELAY, startSide, throughputRun, withClients } from '../harness';
import type { MemoryRow } from '../results';
import { scenario } from './scenario';

export default scenario('memory', async (bench) => {
  log('memory: one batch in a fresh process per side');
  const rows: MemoryRow[] = [];
  for (const side of [NOOP, BARE, RELAY, PEER]) {
    const row = await withClients([() => startSide(bench, side, 10, true)], async ([client]) => {
      const run = await throughputRun(bench, client, BATCH);
      if (run.failures > 0 && side.kind !== 'noop') bench.notes.push(`memory ${side.name}: ${run.failures} failures`);
      const final = await client.run({ eventFile: eventFile(1), timeoutMs: DEADLINE_MS });
      return { side: side.name, description: side.description, initMiB: client.initRssKiB / 1024, peakMiB: final.maxRssKiB / 1024 };
    });
    rows.push(row);
  }
  return rows;
});
