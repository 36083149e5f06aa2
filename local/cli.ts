/**
 * The daemon's command line (`sqs-webhook-relay`, `npm start`): `--help`, `--version`, and a
 * one-line refusal of anything else. Everything the relay reads is an environment variable; the
 * help lists them from the settings registry (`lambda/settings.ts`), as docs/configuration.md does.
 */
import { version } from '../package.json';
import type { Env } from '../lambda/env';
import { type Setting, type SettingName, SETTING_DOCS, SETTINGS } from '../lambda/settings';

/** The command's name, as `npx` and the Docker image run it. */
export const COMMAND = 'sqs-webhook-relay';

/** Strips the Markdown a terminal would show literally: code spans, links, emphasis. */
function plain(markdown: string): string {
  return markdown
    .replace(/\[([^\]]+)\]\([^)]*\)/g, '$1')
    .replace(/`([^`]*)`/g, '$1')
    .replace(/\*\*([^*]+)\*\*/g, '$1')
    .trim();
}

/**
 * Up to the first `;` or `.` outside parentheses: what fits a terminal line (the docs have the rest).
 */
function firstClause(text: string): string {
  let depth = 0;
  for (let i = 0; i < text.length; i += 1) {
    const char = text[i];
    if (char === '(') depth += 1;
    else if (char === ')') depth = Math.max(0, depth - 1);
    else if (depth === 0 && (char === ';' || char === '.') && (text[i + 1] === ' ' || i + 1 === text.length)) return text.slice(0, i);
  }
  return text;
}

/** A variable's help line, from the settings registry: its meaning and, when it has one, its default. */
function describe(name: SettingName): string {
  const setting: Setting = SETTINGS[name];
  const value = setting.default;
  const fallback = setting.defaultText ?? (value === undefined ? undefined : Array.isArray(value) ? value.join(',') : String(value));
  // A default in parentheses is already a remark ("(required; …)"), not a value.
  const shown =
    fallback === undefined ? '' : fallback.startsWith('(') ? ` ${plain(fallback)}` : ` (default: ${firstClause(plain(fallback))})`;
  return `  ${(setting.variable ?? name).padEnd(30)} ${firstClause(plain(SETTING_DOCS[name]))}${shown}`;
}

/** The `--help` text: every variable of the function and of the daemon, as the settings registry declares them. */
export function helpText(): string {
  const names = Object.keys(SETTINGS) as SettingName[];
  const of = (scope: Setting['scope']): string[] => names.filter((name) => SETTINGS[name].scope === scope).map(describe);
  return [
    `${COMMAND} ${version}: relays every message of an SQS queue to an HTTP webhook, as the`,
    `relay's Lambda function does, from this process (a daemon beside a worker).`,
    '',
    `Usage: ${COMMAND} [--help | --version]`,
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
 * refuses an unknown argument with one line and exits 2, and otherwise returns.
 */
export function handleCommandLine(args: readonly string[], out: NodeJS.WritableStream = process.stdout): void {
  const [first] = args;
  if (first === undefined) return;
  if (first === '--help' || first === '-h') {
    out.write(helpText());
    process.exit(0);
  }
  if (first === '--version' || first === '-v') {
    out.write(`${version}\n`);
    process.exit(0);
  }
  process.stderr.write(
    `${COMMAND}: unknown argument ${JSON.stringify(first)}; it takes only --help or --version (settings are environment variables)\n`,
  );
  process.exit(2);
}

/**
 * Refuses to start the sandbox when its emulator is not installed: the published package lists
 * fauxqs as an optional peer, so a production install (a Docker image) relays from `QUEUE_URL` only.
 */
export function checkSandboxAvailable(env: Env = process.env): void {
  if (env.QUEUE_URL !== undefined && env.QUEUE_URL.trim() !== '') return;
  try {
    import.meta.resolve('fauxqs');
  } catch {
    process.stderr.write(
      `${COMMAND}: QUEUE_URL is not set, and the sandbox's SQS emulator is not installed: set QUEUE_URL to your queue, or npm install fauxqs for the sandbox\n`,
    );
    process.exit(1);
  }
}
