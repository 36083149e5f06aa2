/**
 * `npm run bench`: the relay against a bare HTTP client and the relay a user would otherwise write, side by side, on this machine,
 * every part on 127.0.0.1 in a process of its own, the children on the Node.js standing in for Lambda's (bin/lambda-node.ts).
 * Publishes its figures (bench/published.ts: `BENCHMARKS.md` and the figures of docs/performance.md, docs/operations.md and the README); on another Node.js
 * major than Lambda's, or with `--quick`, writes its reports into `.bench-tmp/` instead.
 *
 * Options: `--quick` (fewer, smaller runs; reports to `.bench-tmp/`), `--profile` (the relay's CPU profiles in `.bench-tmp/profiles/`),
 * `--this-node` or `--node=<path>` (the children's Node.js), `--rounds=<n>` (rounds of the concurrency-10 throughput figures: 9, quick 2),
 * `--report-only` (the reports from the last run's `.bench-tmp/results.json`, with `--quick` the last quick run's), `--only=<names>`
 * (these scenarios only, e.g. `--only=back-pressure,recovery`: figures printed and written to `.bench-tmp/results.only.json`, no report).
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { isLambdaNodeMajor } from '../bin/lambda-node';
import { nodeMajor } from '../bin/node-release';
import { PROJECT_ROOT, synthesizeBundle } from '../testkit/synth';
import { SCRATCH_DIR } from './children';
import { badOption, childNode, log, ONLY, QUICK, scenarioName, startBench } from './harness';
import { publish, unpublishedFigures } from './published';
import { backPressureText, consoleTable, deadLettersText, markdown } from './report';
import { type BenchResults, type Figures, machineInfo, SCENARIOS } from './results';

/** Where a run's figures are kept for `--report-only`: a quick run keeps its own, so it never overwrites a full run's. */
const RESULTS_FILE = join(SCRATCH_DIR, QUICK ? 'results.quick.json' : 'results.json');

/** Which of the deployed function's variables `relayConfig` keeps. */
const REPORTED_SETTINGS =
  /^(MAX_CONCURRENCY|REQUEST_TIMEOUT_MS|SIGNING_SECRET_ARN|POWERTOOLS_LOG_LEVEL|NODE_OPTIONS|BACKOFF|DLQ_URL|OUTAGE_THRESHOLD)$/;

/**
 * The reports: on Lambda's Node.js major, published (bench/published.ts: the figures kept in the repository, BENCHMARKS.md and the
 * figures of docs/performance.md, docs/operations.md and the README); else files of their own in `.bench-tmp/`.
 */
function writeReports(results: BenchResults): void {
  process.stdout.write(`${consoleTable(results)}\n`);
  if (!results.quick && isLambdaNodeMajor(results.machine.node)) {
    log(`wrote ${publish(results, PROJECT_ROOT).join(', ')}`);
    return;
  }
  const suffix = results.quick ? 'quick' : `node${nodeMajor(results.machine.node)}`;
  const files = [
    [`BENCHMARKS.${suffix}.md`, markdown(results)],
    [`figures.${suffix}.md`, unpublishedFigures(results)],
  ] as const;
  for (const [name, text] of files) writeFileSync(join(SCRATCH_DIR, name), text);
  log(`wrote ${files.map(([name]) => relative(PROJECT_ROOT, join(SCRATCH_DIR, name))).join(', ')}`);
}

async function main(): Promise<void> {
  for (const arg of process.argv.slice(2)) {
    if (!/^--(quick|profile|this-node|report-only|(only|rounds|node)=.*)$/.test(arg))
      badOption(`${arg}: no such option (bench/run.ts lists them)`);
  }
  const names = Object.keys(SCENARIOS).map(scenarioName);
  const unknown = ONLY?.filter((name) => !names.includes(name)) ?? [];
  if (unknown.length > 0) badOption(`--only=${unknown.join(',')}: no such scenario; there are ${names.join(', ')}`);
  if (process.argv.includes('--report-only')) {
    if (!existsSync(RESULTS_FILE))
      badOption(
        `--report-only: no figures in ${relative(PROJECT_ROOT, RESULTS_FILE)}; run \`npm run bench${QUICK ? ' -- --quick' : ''}\` first`,
      );
    writeReports(JSON.parse(readFileSync(RESULTS_FILE, 'utf8')) as BenchResults);
    return;
  }
  const started = Date.now();
  const machine = machineInfo(childNode());
  log(`${machine.cpu}, ${machine.cores} cores, Node ${machine.node}${QUICK ? ' (quick)' : ''}`);
  log('cdk synth (the deployable bundle)…');
  const bundle = await synthesizeBundle();
  const cleanUps: (() => Promise<void> | void)[] = [() => rmSync(bundle.assemblyDir, { recursive: true, force: true })];
  try {
    rmSync(join(SCRATCH_DIR, 'profiles'), { recursive: true, force: true });
    const bench = await startBench(bundle, cleanUps);
    const figures: Partial<Figures> = {};
    for (const [key, run] of Object.entries(SCENARIOS)) {
      if (ONLY === undefined || ONLY.includes(scenarioName(key))) (figures as Record<string, unknown>)[key] = await run(bench);
    }
    const relaySettings = Object.entries(bench.relayEnv).filter(([name]) => REPORTED_SETTINGS.test(name));
    const results = {
      machine,
      quick: QUICK,
      durationSeconds: (Date.now() - started) / 1000,
      relayConfig: Object.fromEntries(relaySettings) as Record<string, string>,
      ...figures,
      notes: bench.notes,
    };
    const file = ONLY === undefined ? RESULTS_FILE : join(SCRATCH_DIR, 'results.only.json');
    writeFileSync(file, JSON.stringify(results, null, 2));
    if (ONLY === undefined) writeReports(results as BenchResults);
    else {
      process.stdout.write(`${backPressureText(figures) ?? deadLettersText(figures) ?? JSON.stringify(figures, null, 2)}\n`);
      for (const note of bench.notes) log(`note: ${note}`);
    }
    log(`wrote ${relative(PROJECT_ROOT, file)}; done in ${Math.round(results.durationSeconds)} s`);
  } finally {
    for (const cleanUp of cleanUps.reverse()) {
      await Promise.resolve()
        .then(cleanUp)
        .catch((error: unknown) => log(`clean-up: ${error instanceof Error ? error.message : String(error)}`));
    }
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    log(`failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exit(1);
  },
);
