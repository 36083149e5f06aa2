/** Cold start: the asset's weight, its load time in fresh processes, and the first invocations of fresh processes. */
import { relative } from 'node:path';
import { weighAsset } from '../bundle';
import { SCRATCH_DIR } from '../children';
import { clientEnv, DEADLINE_MS, eventFile, log, QUICK, RELAY, scratchModule, startSide, timeImport } from '../harness';
import { median } from '../stats';
import { scenario } from './scenario';

/** The median of each figure over `runs`. */
function medians<K extends string>(runs: readonly Readonly<Record<K, number>>[]): Record<K, number> {
  const keys = Object.keys(runs[0] ?? {}) as K[];
  return Object.fromEntries(keys.map((key) => [key, median(runs.map((run) => run[key]))])) as Record<K, number>;
}

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
  const loads = [];
  for (const variant of variants) {
    const timings = [];
    for (let run = 0; run < runs; run += 1) {
      const emptyProcessMs = (await timeImport(empty, variant.env, SCRATCH_DIR)).processMs;
      const { processMs: bundleProcessMs, importMs } = await timeImport(variant.file, variant.env, variant.dir);
      timings.push({ bundleProcessMs, emptyProcessMs, importMs });
    }
    loads.push({ variant: variant.name, ...medians(timings), runs });
  }
  log('cold start: first invocations in fresh processes');
  const first = [];
  for (let run = 0; run < (QUICK ? 2 : 5); run += 1) {
    const client = await startSide(bench, RELAY, 10, true);
    try {
      await bench.webhook.reset('ok');
      const invoke = () => client.run({ eventFile: eventFile(1), timeoutMs: DEADLINE_MS });
      const [one, two] = [await invoke(), await invoke()];
      if (one.failures + two.failures > 0) bench.notes.push('cold start: a first invocation failed');
      first.push({ importMs: client.importMs, firstMs: one.wallMs, secondMs: two.wallMs });
    } finally {
      await client.stop();
    }
  }
  return { weight, loads, firstInvocation: { ...medians(first), processes: first.length } };
});
