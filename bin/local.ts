/**
 * `sqs-webhook-relay` (the package's bin) and `npm start`: the relay on this machine (see `local/sandbox/`, `local/daemon.ts`, `local/runner.ts` and docs/local.md).
 * Start-up failures print one line and exit 1; SIGINT/SIGTERM stop polling, let the batches in
 * flight finish and be acknowledged, and exit 0. A second signal exits at once (130): whatever
 * was in flight then comes back after its visibility timeout, as from a crashed Lambda.
 *
 * `npm start` execs `node --import tsx bin/local.ts`: with no shell (and no tsx CLI) between npm
 * and this process, a SIGTERM sent to npm alone (`docker stop`, a process manager) is forwarded
 * here, and npm exits with this process's status. `npx tsx bin/local.ts` runs under a shell that
 * dies of SIGTERM without passing it on, orphaning this process: not for containers.
 */
import { checkSandboxAvailable, handleCommandLine, runAndExit } from '../local/cli';
import { oneLine, StartupStopped } from '../local/errors';
import { COLOR, PLAIN } from '../local/log';
import { read } from '../lambda/env';
import { startDaemon } from '../local/daemon';
import type { LocalRelay } from '../local/runner';
import { startSandbox } from '../local/sandbox/sandbox';

/** A signal this soon after the first is taken as the same request to stop. */
const REPEAT_GRACE_MS = 1_000;
const isTerminal = process.stdout.isTTY === true;
const styles = isTerminal && !process.env.NO_COLOR ? COLOR : PLAIN;

function fail(error: unknown): never {
  process.stderr.write(`sqs-webhook-relay: ${oneLine(error)}\n`);
  if (/^(DEBUG|TRACE)$/i.test(process.env.LOG_LEVEL ?? '') && error instanceof Error && error.stack !== undefined)
    process.stderr.write(`${error.stack}\n`);
  process.exit(1);
}

// --help, --version; or a subcommand (`send`, `dead-letters`), run instead of the relay and exiting with its status.
const subcommand = handleCommandLine(process.argv.slice(2));
if (subcommand !== undefined) await runAndExit(subcommand);
checkSandboxAvailable();

process.on('uncaughtException', fail);
process.on('unhandledRejection', fail);

let relay: LocalRelay | undefined;
let firstSignalAt: number | undefined;
/** Aborted by a stop during the start: the daemon's calls to an SQS that does not answer end at once, not in 10 s. */
const startupStop = new AbortController();

function stopAndExit(running: LocalRelay): void {
  running.stop().then(
    // Kept-alive webhook connections may hold the event loop open; everything worth waiting for is done.
    () => process.exit(0),
    fail,
  );
}

const stop = (signal: NodeJS.Signals): void => {
  if (firstSignalAt !== undefined) {
    // A wrapper (npm, tsx) may relay the very Ctrl-C the terminal already delivered: not a second request.
    if (Date.now() - firstSignalAt < REPEAT_GRACE_MS) return;
    process.stderr.write(`sqs-webhook-relay: ${signal} again, exiting without waiting for the batches in flight\n`);
    process.exit(130);
  }
  firstSignalAt = Date.now();
  // During start-up the stop waits for the relay to be up (below): its pollers may be receiving already.
  if (relay !== undefined) stopAndExit(relay);
  else startupStop.abort();
};
// Installed before the relay starts: the ready line is printed and polling begins inside
// the runner, and a signal before these handlers would kill the process mid-receive.
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
// The output's reader is gone (`npm start | jq`, whose jq the same Ctrl-C ended, or `| head`): stop as for a
// signal, finishing the batches in flight, rather than die of EPIPE with delivered messages left undeleted.
for (const output of [process.stdout, process.stderr]) {
  output.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE' && error.code !== 'ERR_STREAM_DESTROYED') fail(error);
    else if (firstSignalAt === undefined) stop('SIGPIPE');
  });
}

try {
  // QUEUE_URL names an existing queue (the daemon); without it, the sandbox makes one.
  const start = read(process.env, 'QUEUE_URL') === undefined ? startSandbox : startDaemon;
  relay = await start({ out: process.stdout, isTerminal, styles, startupStop: startupStop.signal });
} catch (error) {
  if (error instanceof StartupStopped) {
    process.stderr.write(`sqs-webhook-relay: ${error.message}\n`);
    process.exit(0);
  }
  fail(error);
}
if (firstSignalAt !== undefined) stopAndExit(relay);
