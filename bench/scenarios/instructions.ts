/** Instructions per record of the relay and its limits, counted by callgrind (bench/instructions.ts; BENCHMARKS.md says why). */
import { BARE_SIGNING, BARE_UNSIGNED, eventFile, log, QUICK, RELAY, RELAY_UNSIGNED, SIMULATE_CACHES, sideClient } from '../harness';
import { countInstructions } from '../instructions';
import { scenario } from './scenario';

/** Records per counted invocation under valgrind (about 50× slower than natively). */
const COUNTED_RECORDS = QUICK ? 500 : 2_000;
/** Uninstrumented invocations first: on Node.js 24 the counts settle from the tenth on. */
const WARM_UP_RUNS = QUICK ? 2 : 10;

export default scenario('instructions', async (bench) => {
  const sides = [RELAY, BARE_SIGNING, RELAY_UNSIGNED, BARE_UNSIGNED];
  const concurrency = 10;
  log(`instructions per record (callgrind), concurrency ${concurrency}: ${sides.map((side) => side.name).join(', ')}`);
  await bench.webhook.reset('ok');
  return countInstructions(
    bench.compiled,
    sides.map((side) => ({ name: side.name, client: sideClient(bench, side, concurrency) })),
    {
      concurrency,
      records: COUNTED_RECORDS,
      eventFile: eventFile(COUNTED_RECORDS),
      warmUpRuns: WARM_UP_RUNS,
      countedRuns: QUICK ? 1 : 6,
      simulateCaches: SIMULATE_CACHES,
      log,
    },
  );
});
