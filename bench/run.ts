/**
 * `npm run bench`: the relay's performance against a bare HTTP client and the relay a user would
 * otherwise write, side by side in one run, on this machine. Prints a table and writes
 * `BENCHMARKS.md` and the figures of docs/performance.md (bench/report.ts, bench/templates/).
 *
 * Everything runs on 127.0.0.1 in processes of its own: the webhook, each client under test (the
 * relay's handler imported from the bundle `cdk synth` produces, with the template's environment),
 * the SQS emulator behind a counting proxy, and a stand-in Secrets Manager for the signing key. The
 * children run on the Node.js standing in for Lambda's runtime (bin/lambda-node.ts). Each
 * measurement is a scenario in bench/scenarios/; loops are bounded; the run stops by itself.
 *
 * Options: `--quick` (fewer and smaller runs, figures not for publishing), `--profile` (V8 CPU
 * profiles of the relay's children in `.bench-tmp/profiles/`), `--this-node` (the children on the
 * Node.js running npm), `--node=<path>` (on another binary), `--rounds=<n>` (rounds of the
 * concurrency-10 throughput figures; default 9, 2 with `--quick`), `--report-only` (rewrites the
 * reports from the last run's `.bench-tmp/results.json`, measuring nothing), `--only=<names>` (only
 * these scenarios, e.g. `--only=back-pressure,recovery`: figures printed and written to
 * `.bench-tmp/results.only.json`, no report). A run on another Node.js major than Lambda's writes
 * `BENCHMARKS.node<major>.md` and leaves docs/performance.md alone; quick runs write their reports to `.bench-tmp/`.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isLambdaNodeMajor, nodeMajor } from '../bin/lambda-node';
import { startEmulator } from '../testkit/emulator';
import { startSecretsManager } from '../testkit/secrets-manager';
import { startSqsProxy } from '../testkit/sqs-proxy';
import { PROJECT_ROOT, synthesizeBundle, templateQueues } from '../testkit/synth';
import { compileChildren, SCRATCH_DIR, startWebhookProcess } from './children';
import { deployedEnvironment, machineInfo } from './environment';
import { badOption, type Bench, childNode, clientEnv, log, ONLY, QUICK, RELAY, scenarioName } from './harness';
import { backPressureText, consoleTable, markdown, PERFORMANCE_DOC, performanceSection } from './report';
import type { BenchResults } from './results';
import { SCENARIOS } from './scenarios';
import type { Figures } from './scenarios/scenario';

/** The relay's settings the report names: the template's values the children ran with. */
const REPORTED_SETTINGS =
  /^(MAX_CONCURRENCY|REQUEST_TIMEOUT_MS|SIGNING_SECRET_ARN|POWERTOOLS_LOG_LEVEL|NODE_OPTIONS|BACKOFF|DLQ_URL|OUTAGE_THRESHOLD)$/;

/** Rewrites the figures between the markers of docs/performance.md; the text around them is written by hand. */
function writePerformanceDoc(section: string): string {
  const file = join(PROJECT_ROOT, PERFORMANCE_DOC.path);
  const text = readFileSync(file, 'utf8');
  const start = text.indexOf(PERFORMANCE_DOC.start);
  const end = text.indexOf(PERFORMANCE_DOC.end);
  if (start < 0 || end < start) throw new Error(`${PERFORMANCE_DOC.path} has no ${PERFORMANCE_DOC.start} … ${PERFORMANCE_DOC.end} markers`);
  writeFileSync(file, `${text.slice(0, start + PERFORMANCE_DOC.start.length)}\n${section.trim()}\n${text.slice(end)}`);
  return file;
}

/**
 * The reports: a run on Lambda's Node.js major writes `BENCHMARKS.md` and docs/performance.md; on
 * another major, a report of its own beside it; a quick run, into the scratch directory.
 */
function writeReports(results: BenchResults): void {
  process.stdout.write(`${consoleTable(results)}\n`);
  const major = nodeMajor(results.machine.node);
  const published = !results.quick && isLambdaNodeMajor(results.machine.node);
  const markdownFile = results.quick
    ? join(SCRATCH_DIR, 'BENCHMARKS.quick.md')
    : join(PROJECT_ROOT, published ? 'BENCHMARKS.md' : `BENCHMARKS.node${major}.md`);
  writeFileSync(markdownFile, markdown(results));
  const section = performanceSection(results);
  const sectionFile = published
    ? writePerformanceDoc(section)
    : join(SCRATCH_DIR, results.quick ? 'README-performance.quick.md' : `README-performance.node${major}.md`);
  if (!published) writeFileSync(sectionFile, section);
  log(`wrote ${markdownFile} and ${sectionFile}`);
}

/** The scenarios to run: all, or those `--only` names; options checked before anything starts. */
function selectedScenarios(): typeof SCENARIOS {
  for (const arg of process.argv.slice(2)) {
    if (!/^--(quick|profile|this-node|report-only|(only|rounds|node)=.*)$/.test(arg))
      badOption(`${arg}: no such option (bench/run.ts lists them)`);
  }
  const names = SCENARIOS.map((scenario) => scenarioName(scenario.key));
  const unknown = ONLY?.filter((name) => !names.includes(name)) ?? [];
  if (unknown.length > 0) badOption(`--only=${unknown.join(',')}: no such scenario; there are ${names.join(', ')}`);
  return SCENARIOS.filter((scenario) => ONLY === undefined || ONLY.includes(scenarioName(scenario.key)));
}

async function main(): Promise<void> {
  const scenarios = selectedScenarios();
  if (process.argv.includes('--report-only')) {
    writeReports(JSON.parse(readFileSync(join(SCRATCH_DIR, 'results.json'), 'utf8')) as BenchResults);
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
    const compiled = await compileChildren();
    const queues = templateQueues(bundle.template);
    const { visibilityTimeout, maxReceiveCount } = queues;
    const emulator = await startEmulator({ keepEnvironment: true, visibilityTimeout, maxReceiveCount });
    cleanUps.push(() => emulator.stop());
    const proxy = await startSqsProxy(emulator.endpoint, emulator.region);
    cleanUps.push(() => proxy.close());
    const secrets = await startSecretsManager();
    cleanUps.push(() => secrets.close());
    const webhook = await startWebhookProcess(compiled, childNode());
    cleanUps.push(() => webhook.stop());
    const relayEnv = deployedEnvironment(bundle, {
      region: emulator.region,
      sqsEndpoint: proxy.endpoint,
      secretsEndpoint: secrets.endpoint,
      queues: { [queues.queueLogicalId]: emulator.queue, [queues.deadLetterQueueLogicalId]: emulator.dlq },
    });
    // The key as Secrets Manager generates it for the stack: 48 letters and digits (valid base64).
    const randomBase64 = randomBytes(96).toString('base64');
    const signingSecret = randomBase64.replace(/[^A-Za-z0-9]/g, '').slice(0, 48);
    if (relayEnv.SIGNING_SECRET_ARN !== undefined) secrets.secrets.set(relayEnv.SIGNING_SECRET_ARN, signingSecret);
    const bench: Bench = { bundle, relayEnv, compiled, webhook, emulator, proxy, secrets, signingSecret, notes: [] };

    const figures: Partial<Figures> = {};
    for (const scenario of scenarios) (figures as Record<string, unknown>)[scenario.key] = await scenario.run(bench, figures);
    if (ONLY !== undefined) {
      writeFileSync(join(SCRATCH_DIR, 'results.only.json'), JSON.stringify({ machine, quick: QUICK, ...figures }, null, 2));
      process.stdout.write(`${backPressureText(figures) ?? JSON.stringify(figures, null, 2)}\n`);
      log(`wrote ${join(SCRATCH_DIR, 'results.only.json')}; done in ${Math.round((Date.now() - started) / 1000)} s`);
      return;
    }
    const relaySettings = Object.entries(clientEnv(bench, RELAY, 10)).filter(([name]) => REPORTED_SETTINGS.test(name));
    const results = {
      machine,
      quick: QUICK,
      durationSeconds: (Date.now() - started) / 1000,
      relayConfig: Object.fromEntries(relaySettings) as Record<string, string>,
      ...(figures as Figures),
      notes: bench.notes,
    } satisfies BenchResults;
    writeFileSync(join(SCRATCH_DIR, 'results.json'), JSON.stringify(results, null, 2));
    writeReports(results);
    log(`done in ${Math.round(results.durationSeconds)} s`);
  } finally {
    for (const cleanUp of cleanUps.reverse()) {
      try {
        await cleanUp();
      } catch (error) {
        log(`clean-up: ${error instanceof Error ? error.message : String(error)}`);
      }
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
