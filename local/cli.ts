/**
 * The command line of `sqs-webhook-relay` (`npm start`, `npm run send`, `npm run dead-letters` in a
 * clone): the relay itself with no argument, its subcommands (`send`, `dead-letters`), `--help`,
 * `--version`, and a one-line refusal of anything else. Everything the relay reads is an
 * environment variable; the help lists them from the settings registry (`lambda/settings.ts`), as
 * docs/configuration.md does.
 */
import { version } from '../package.json';
import { type Env, read } from '../lambda/env';
import { type Setting, type SettingName, SETTING_DOCS, SETTINGS } from '../lambda/settings';
import type { CommandIo, ExitStatus } from './command-io';
import { runDeadLetters } from './dead-letters/command';
import { oneLine, StartupError, UsageError } from './errors';
import { COMMAND, subcommandPrefix } from './invocation';
import { runSend } from './send';
import { STACK_ONLY_SETTINGS } from './settings';

/** The subcommands, by the word that names them. */
const SUBCOMMANDS: Readonly<Record<string, (args: readonly string[], io: CommandIo) => Promise<ExitStatus>>> = {
  send: runSend,
  'dead-letters': runDeadLetters,
};

/** Strips the Markdown a terminal would show literally: code spans, links, emphasis. */
function plain(markdown: string): string {
  return markdown
    .replace(/\[([^\]]+)\]\([^)]*\)/g, '$1')
    .replace(/`([^`]*)`/g, '$1')
    .replace(/\*\*([^*]+)\*\*/g, '$1')
    .trim();
}

/** The clauses of `text`, split at each `;` (and, with `atFullStop`, `.`) outside parentheses that ends one. */
function clauses(text: string, atFullStop: boolean): string[] {
  const found: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i += 1) {
    const char = text[i];
    if (char === '(') depth += 1;
    else if (char === ')') depth = Math.max(0, depth - 1);
    else if (depth === 0 && (char === ';' || (atFullStop && char === '.')) && (text[i + 1] === ' ' || i + 1 === text.length)) {
      found.push(text.slice(start, i));
      start = i + 2;
    }
  }
  return start < text.length ? [...found, text.slice(start)] : found;
}

/** Up to the first `;` or `.` outside parentheses: what fits a terminal line (the docs have the rest). */
function firstClause(text: string): string {
  return clauses(text, true)[0] ?? text;
}

/**
 * The default this process has, from the registry's words (`the stack: …; local mode: …`): its
 * `local mode:` clause, else those that are not the stack's; `undefined` when only the stack has one
 * (`SIGNING_SECRET_ARN`: the stack creates a key, the daemon signs nothing unless given one).
 */
function localDefault(text: string): string | undefined {
  const remark = text.startsWith('(') && text.endsWith(')');
  const all = clauses(remark ? text.slice(1, -1) : text, false);
  const local = all.find((clause) => clause.startsWith('local mode: '));
  const kept = local === undefined ? all.filter((clause) => !clause.startsWith('the stack:')) : [local.slice('local mode: '.length)];
  if (kept.length === 0) return undefined;
  return remark ? `(${kept.join('; ')})` : kept.join('; ');
}

/** A variable's help line, from the settings registry: its meaning and, when it has one, its default. */
function describe(name: SettingName): string {
  const setting: Setting = SETTINGS[name];
  const value = setting.default;
  const written = value === undefined ? undefined : Array.isArray(value) ? value.join(',') : String(value);
  const fallback = setting.defaultText === undefined ? written : localDefault(setting.defaultText);
  // A default in parentheses is already a remark ("(required; …)"), not a value.
  const shown =
    fallback === undefined ? '' : fallback.startsWith('(') ? ` ${plain(fallback)}` : ` (default: ${firstClause(plain(fallback))})`;
  return `  ${(setting.variable ?? name).padEnd(30)} ${firstClause(plain(SETTING_DOCS[name]))}${shown}`;
}

/** The `--help` text: every variable of the function and of the daemon, as the settings registry declares them. */
export function helpText(): string {
  const names = Object.keys(SETTINGS) as SettingName[];
  const of = (scope: Setting['scope']): string[] =>
    names.filter((name) => SETTINGS[name].scope === scope && STACK_ONLY_SETTINGS[name] === undefined).map(describe);
  return [
    `${COMMAND} ${version}: relays every message of an SQS queue to an HTTP webhook, as the`,
    `relay's Lambda function does, from this process (a daemon beside a worker).`,
    '',
    `Usage: ${COMMAND}                              the relay (this help: --help; the version: --version)`,
    `       ${COMMAND} send [BODY]                  send test messages (${subcommandPrefix('send')} --help)`,
    `       ${COMMAND} dead-letters summary|replay  why messages were dead-lettered; replay what was fixed`,
    `                                                 (${subcommandPrefix('dead-letters')} --help)`,
    '',
    'Configured by environment variables only. With QUEUE_URL it relays from that existing queue',
    "(credentials and region: the AWS SDK's usual chain, e.g. AWS_REGION, AWS_PROFILE); without it,",
    'it starts a sandbox: an SQS emulator in this process (needs the optional package fauxqs).',
    'SIGTERM or SIGINT stops polling, lets the batches in flight finish, and exits 0.',
    '',
    'The relay (the same variables as the Lambda function):',
    ...of('function'),
    '',
    'The daemon (its queue and polling):',
    ...of('local'),
    '',
    'Every variable, its default and why: docs/configuration.md (in the package: node_modules/sqs-webhook-relay/docs/).',
    '',
  ].join('\n');
}

/**
 * Acts on the command line before the relay starts: prints help or the version and exits 0,
 * refuses an unknown argument with one line and exits 2; returns the subcommand to run instead of
 * the relay, or `undefined` to start the relay.
 */
export function handleCommandLine(
  args: readonly string[],
  out: NodeJS.WritableStream = process.stdout,
): ((io: CommandIo) => Promise<ExitStatus>) | undefined {
  const [first, ...rest] = args;
  if (first === undefined) return undefined;
  if (first === '--help' || first === '-h') {
    out.write(helpText());
    process.exit(0);
  }
  if (first === '--version' || first === '-v') {
    out.write(`${version}\n`);
    process.exit(0);
  }
  const subcommand = SUBCOMMANDS[first];
  if (subcommand !== undefined) return (io) => runSubcommand(first, () => subcommand(rest, io), io);
  process.stderr.write(
    `${COMMAND}: unknown argument ${JSON.stringify(first)}; it takes a subcommand (${Object.keys(SUBCOMMANDS).join(', ')}), --help or --version (the relay's settings are environment variables)\n`,
  );
  process.exit(2);
}

/** A signal this soon after the first is the same Ctrl-C relayed by a wrapper (npm), not a second request. */
const REPEAT_GRACE_MS = 1_000;

/**
 * Runs a subcommand as this process (the bin's `process.argv`, streams and environment), then
 * exits with its status once its output has left. SIGINT or SIGTERM stops what it started (it
 * makes visible again what it holds, and reports); a second signal exits at once (130).
 */
export async function runAndExit(subcommand: (io: CommandIo) => Promise<ExitStatus>): Promise<never> {
  const interrupted = new AbortController();
  let firstAt: number | undefined;
  const interrupt = (): void => {
    if (firstAt === undefined) {
      firstAt = Date.now();
      interrupted.abort();
    } else if (Date.now() - firstAt >= REPEAT_GRACE_MS) process.exit(130);
  };
  process.on('SIGINT', interrupt);
  process.on('SIGTERM', interrupt);
  const status = await subcommand({
    out: process.stdout,
    err: process.stderr,
    env: process.env,
    stdin: process.stdin,
    errIsTerminal: process.stderr.isTTY === true,
    signal: interrupted.signal,
  });
  // Exits from the write's callback: a pipe may still hold the output. The promise never settles.
  return new Promise<never>(() => process.stdout.write('', () => process.exit(status)));
}

/**
 * Runs a subcommand: its failure is one line on standard error (the command's name first) and
 * exit status 1, or 2 for a command line it cannot run with.
 */
export async function runSubcommand(name: string, run: () => Promise<ExitStatus>, io: CommandIo): Promise<ExitStatus> {
  try {
    return await run();
  } catch (error) {
    // node:util's parseArgs: a missing value, an argument where none is taken (an unknown option is a UsageError).
    const usage =
      error instanceof UsageError ||
      (error instanceof TypeError && String((error as { code?: unknown }).code).startsWith('ERR_PARSE_ARGS'));
    const help = usage && !(error instanceof UsageError) ? ` (${subcommandPrefix(name === 'send' ? 'send' : 'dead-letters')} --help)` : '';
    const text = usage || error instanceof StartupError ? (error as Error).message : oneLine(error);
    io.err.write(`${COMMAND} ${name}: ${text.split('\n')[0]}${help}\n`);
    return usage ? 2 : 1;
  }
}

/**
 * Refuses to start the sandbox when its emulator is not installed: the published package lists
 * fauxqs as an optional peer, so a production install (a Docker image) relays from `QUEUE_URL` only.
 */
export function checkSandboxAvailable(env: Env = process.env): void {
  if (read(env, 'QUEUE_URL') !== undefined) return;
  try {
    import.meta.resolve('fauxqs');
  } catch {
    process.stderr.write(
      `${COMMAND}: QUEUE_URL is not set, and the sandbox's SQS emulator is not installed: set QUEUE_URL to your queue, or npm install fauxqs for the sandbox\n`,
    );
    process.exit(1);
  }
}
