/** Cold start: the asset's weight, its load time in fresh processes, and the first invocations of fresh processes. */
import { relative } from 'node:path';
import { weighAsset } from '../bundle';
import { SCRATCH_DIR } from '../children';
import { clientEnv, DEADLINE_MS, eventFile, log, QUICK, RELAY, scratchModule, startSide, timeImport } from '../harness';
import type { LoadTiming } from '../results';
import { median } from '../stats';
import { scenario } from './scenario';

export default scenario('coldStart', async (bench) => {
  log('cold start: asset weight, load time in fresh processes');
  const { bundleDir, handlerFile } = bench.bundle;
  const weight = await weighAsset(bundleDir, relative(bundleDir, handlerFile));
  const empty = scratchModule('empty.mjs', 'export {};\n');
  const builtins = scratchModule('builtins.mjs', weight.builtinsAtImport.map((name) => `import ${JSON.stringify(name)};\n`).join(''));
  const env = clientEnv(bench, RELAY, 10);
  const variants = [
    { name: `as deployed (\`NODE_OPTIONS=${env.NODE_OPTIONS ?? ''}\`)`, env, file: handlerFile, dir: bundleDir },
    { name: 'as deployed, without `--enable-source-maps`', env: { ...env, NODE_OPTIONS: '' }, file: handlerFile, dir: bundleDir },
    // How much of the difference is Node.js loading its own modules rather than reading the relay.
    { name: 'not the bundle: only the Node.js built-ins it imports at load', env, file: builtins, dir: SCRATCH_DIR },
  ];
  const runs = QUICK ? 5 : 15;
  const loads: LoadTiming[] = [];
  for (const variant of variants) {
    const bundleRuns: { processMs: number; importMs: number }[] = [];
    const emptyRuns: number[] = [];
    for (let run = 0; run < runs; run += 1) {
      emptyRuns.push((await timeImport(empty, variant.env, SCRATCH_DIR)).processMs);
      bundleRuns.push(await timeImport(variant.file, variant.env, variant.dir));
    }
    const bundleProcessMs = median(bundleRuns.map((run) => run.processMs));
    loads.push({
      variant: variant.name,
      bundleProcessMs,
      emptyProcessMs: median(emptyRuns),
      importMs: median(bundleRuns.map((run) => run.importMs)),
      runs,
    });
  }
  log('cold start: first invocations in fresh processes');
  const first: { importMs: number; firstMs: number; secondMs: number }[] = [];
  for (let run = 0; run < (QUICK ? 2 : 5); run += 1) {
    const client = await startSide(bench, RELAY, 10, true);
    try {
      await bench.webhook.reset('ok');
      const one = await client.run({ eventFile: eventFile(1), timeoutMs: DEADLINE_MS });
      const two = await client.run({ eventFile: eventFile(1), timeoutMs: DEADLINE_MS });
      if (one.failures + two.failures > 0) bench.notes.push('cold start: a first invocation failed');
      first.push({ importMs: client.importMs, firstMs: one.wallMs, secondMs: two.wallMs });
    } finally {
      await client.stop();
    }
  }
  const medianOf = (figure: (run: (typeof first)[number]) => number): number => median(first.map(figure));
  return {
    weight,
    loads,
    firstInvocation: {
      importMs: medianOf((run) => run.importMs),
      firstMs: medianOf((run) => run.firstMs),
      secondMs: medianOf((run) => run.secondMs),
      processes: first.length,
    },
  };
});
