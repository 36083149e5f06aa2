/** Cold start: what importing the handler loads, the whole asset, and a fresh process's load time as deployed against an empty module's. */
import { spawnSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { assetFiles, moduleGraph, staticClosure } from '../../testkit/asset';
import { SCRATCH_DIR } from '../children';
import { type Bench, childNode, log, QUICK, scratchFile } from '../harness';
import { median } from '../stats';

// Exits once the figure is written: whatever the import left running is not part of loading.
const IMPORT_SCRIPT =
  'const t = performance.now(); await import(process.argv[1]); process.stdout.write(String(performance.now() - t), () => process.exit(0));';

/** Wall time of a fresh `node` importing `file`, and the import's own time as the process saw it, ms. */
function timeImport(file: string, env: NodeJS.ProcessEnv, cwd: string): { processMs: number; importMs: number } {
  const started = performance.now();
  const args = ['--input-type=module', '-e', IMPORT_SCRIPT, pathToFileURL(file).href];
  const child = spawnSync(childNode(), args, { env, cwd, encoding: 'utf8', timeout: 30_000 });
  const processMs = performance.now() - started;
  if (child.status !== 0) throw new Error(`importing ${file} ended with ${child.status ?? child.signal}: ${child.stderr.slice(-2000)}`);
  return { processMs, importMs: Number(child.stdout) };
}

/** The asset's weight, and `runs` fresh processes of each kind, interleaved. */
export async function coldStart(bench: Bench) {
  log('cold start: asset weight, load time in fresh processes');
  const { bundleDir, handlerFile } = bench.bundle;
  const entry = relative(bundleDir, handlerFile);
  const graph = await moduleGraph(bundleDir, entry);
  const atImport = [...staticClosure(graph, entry)];
  const files = assetFiles(bundleDir);
  const bytesOf = (names: readonly string[]): number => names.reduce((sum, name) => sum + statSync(join(bundleDir, name)).size, 0);
  /** The whole asset. */
  const total = {
    modules: graph.size,
    moduleBytes: bytesOf(files.filter((name) => !name.endsWith('.map'))),
    mapBytes: bytesOf(files.filter((name) => name.endsWith('.map'))),
  };
  const env = bench.relayEnv;
  const empty = scratchFile('empty.mjs', 'export {};\n');
  const runs = QUICK ? 5 : 15;
  // Interleaved, so a slower stretch of the machine falls on both.
  const timings = Array.from({ length: runs }, () => ({
    emptyProcessMs: timeImport(empty, env, SCRATCH_DIR).processMs,
    ...timeImport(handlerFile, env, bundleDir),
  }));
  const medianOf = (figure: keyof (typeof timings)[number]): number => median(timings.map((timing) => timing[figure]));
  /** A fresh `node` process importing the bundle against one importing an empty module, medians over `runs` each, ms. */
  const load = {
    variant: `as deployed (\`NODE_OPTIONS=${env.NODE_OPTIONS ?? ''}\`)`,
    bundleProcessMs: medianOf('processMs'),
    emptyProcessMs: medianOf('emptyProcessMs'),
    /** The `import()` itself, timed inside the process. */
    importMs: medianOf('importMs'),
    runs,
  };
  return {
    /** `atImport`: the handler module and every module it imports statically, entry first. */
    weight: { atImport: { files: atImport, bytes: bytesOf(atImport) }, total },
    /** The first is the function as deployed (its `NODE_OPTIONS`). */
    loads: [load],
  };
}
