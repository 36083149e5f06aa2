/** The transmitter's HTTP client: the bare loop on undici and fetch against node:http, and what undici would add to the bundle. */
import { build } from 'esbuild';
import { REQUIRE_BANNER } from '../../lib/bundle';
import { PROJECT_ROOT } from '../../testkit/synth';
import { SCRATCH_DIR } from '../children';
import { BARE, BATCH, compare, FETCH, log, QUICK, scratchModule, timeImport, UNDICI } from '../harness';
import { median } from '../stats';
import { scenario } from './scenario';

/** A bundled, minified undici `Pool` as a handler file would carry it: its bytes, and its load time in a fresh process. */
async function undiciWeight(): Promise<{ bytes: number; loadMs: number }> {
  const result = await build({
    stdin: {
      contents: "import { Pool } from 'undici'; export const pool = (origin) => new Pool(origin);",
      resolveDir: PROJECT_ROOT,
      loader: 'js',
    },
    banner: { js: REQUIRE_BANNER },
    bundle: true,
    minify: true,
    platform: 'node',
    format: 'esm',
    write: false,
    logLevel: 'silent',
  });
  const contents = result.outputFiles[0]?.contents ?? new Uint8Array();
  const file = scratchModule('undici-pool.mjs', contents);
  const empty = scratchModule('empty.mjs', 'export {};\n');
  const withUndici: number[] = [];
  const without: number[] = [];
  for (let run = 0; run < (QUICK ? 3 : 9); run += 1) {
    without.push((await timeImport(empty, { PATH: process.env.PATH }, SCRATCH_DIR)).processMs);
    withUndici.push((await timeImport(file, { PATH: process.env.PATH }, SCRATCH_DIR)).processMs);
  }
  return { bytes: contents.length, loadMs: median(withUndici) - median(without) };
}

export default scenario('clientChoice', async (bench, earlier) => {
  const concurrency = 10;
  log(`HTTP client candidates, concurrency ${concurrency}`);
  const sides = await compare(bench, [UNDICI, FETCH], concurrency, QUICK ? 2 : 3, 1, BATCH);
  const bareHttp = earlier.throughput?.[0]?.sides.find((side) => side.side === BARE.name);
  const undici = await undiciWeight();
  return {
    concurrency,
    sides: bareHttp === undefined ? sides : [bareHttp, ...sides],
    undiciBundleBytes: undici.bytes,
    undiciLoadMs: undici.loadMs,
  };
});
